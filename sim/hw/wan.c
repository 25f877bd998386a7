/* wan.c - ring collectives among sites over their WAN uplinks (wan.h).
 * A WAN link is modeled by its line rate and one-way latency alone: the
 * step's own traffic stays inside each site, so nothing else shares it;
 * TCP's window and loss, which decide what a real long link delivers, are
 * the topology's wan_gbps to state (the achieved rate, not the port's). */
#include "hw/wan.h"

double mm_wan_allreduce_s(const mm_cluster *c, double bytes)
{
    if (c->sites < 2 || !(bytes > 0))
        return 0;
    double S = c->sites;
    return 2 * (S - 1) / S * bytes / c->wan_bw + 2 * (S - 1) * c->wan_latency_s;
}

double mm_wan_allgather_s(const mm_cluster *c, double bytes)
{
    if (c->sites < 2 || !(bytes > 0))
        return 0;
    double S = c->sites;
    return (S - 1) * bytes / c->wan_bw + (S - 1) * c->wan_latency_s;
}

double mm_wan_p2p_s(const mm_cluster *c, double bytes)
{
    if (c->sites < 2 || !(bytes > 0))
        return 0;
    return bytes / c->wan_bw + c->wan_latency_s;
}
