/* set.h - applying one `--set dotted.key=value` override to the scenario
 * document being loaded (internal to sim/scenario; see set.c).
 * Not for: use outside the scenario layer (mm_scenario_load takes the sets). */
#ifndef MM_SCENARIO_SET_H
#define MM_SCENARIO_SET_H

#include "scenario/loader.h"

/* Puts the override into ld->doc.  Returns 0 or -code with err naming
 * "--set" and the key. */
int mm_scenario_apply_set(mm_loader *ld, const char *set, mm_err *err);

#endif
