/* cmd_completion.c - `mmsim completion bash|zsh`: the shell completion
 * scripts, made from the tables the parsers themselves read: each command's
 * getopt options (mm_cli_*_longopts and _shortopts, cli.h) and the scenario
 * keys (scenario/keys.h, the table behind `mmsim help scenario`), so that a
 * new option or key completes without anyone editing a script.  meson runs
 * it at build time and installs the output into the shells' standard
 * completion folders; `source <(mmsim completion bash)` works too.
 * What completes: the commands; each command's options, long and short;
 * after --set, the scenario keys (KEY=) and an enumerated key's choices;
 * the values of options with a fixed set of choices (below: plan --emit's
 * formats, its file then completing as an operand does); files
 * elsewhere.
 * Not for: the usage texts (usage.c). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "hw/coll.h"
#include "mmsim_config.h"
#include "plan/emit.h"
#include "scenario/keys.h"

typedef struct cmd_opts {
    const char *name;
    const struct option *longopts;
    const char *shortopts;
    const char *operands; /* words for the operand, or NULL: files */
} cmd_opts;

static const cmd_opts cmds[] = {
    {"run", mm_cli_run_longopts, mm_cli_run_shortopts, NULL},
    {"model", mm_cli_model_longopts, mm_cli_model_shortopts, NULL},
    {"collective", mm_cli_collective_longopts, mm_cli_collective_shortopts,
     "allreduce allgather reducescatter alltoall broadcast sendrecv"},
    {"workload", mm_cli_workload_longopts, mm_cli_workload_shortopts, "stats"},
    {"sweep", mm_cli_sweep_longopts, mm_cli_sweep_shortopts, NULL},
    {"report", mm_cli_report_longopts, mm_cli_report_shortopts, NULL},
    {"plan", mm_cli_plan_longopts, mm_cli_plan_shortopts, NULL},
    {"profile", mm_cli_profile_longopts, mm_cli_profile_shortopts, NULL},
};
enum { N_CMDS = sizeof cmds / sizeof cmds[0] };

/* Options whose values are a fixed list (the rest take files or numbers). */
static void option_choices(const char *cmd, const char *opt, char *buf, size_t len)
{
    buf[0] = '\0';
    const char *const *list = NULL;
    static const char *const redops[] = {"sum", "prod", "max", "min", "avg", "mulsum", "all", NULL};
    if (!strcmp(cmd, "collective")) {
        if (!strcmp(opt, "--network"))
            list = mm_net_model_names;
        else if (!strcmp(opt, "--algo"))
            list = mm_coll_algo_names;
        else if (!strcmp(opt, "--op") || !strcmp(opt, "-o"))
            list = redops;
        else if (!strcmp(opt, "--collective"))
            list = mm_coll_names;
        else if (!strcmp(opt, "--datatype") || !strcmp(opt, "-d")) {
            size_t n = 0;
            for (int i = 0; mm_coll_dtypes[i].name && n < len; i++)
                n += (size_t)snprintf(buf + n, len - n, "%s ", mm_coll_dtypes[i].name);
            if (n < len)
                snprintf(buf + n, len - n, "all");
            return;
        }
    }
    if (!strcmp(cmd, "plan") && !strcmp(opt, "--emit"))
        list = mm_emit_format_names; /* then the file: an operand, as files */
    static const char *const profile_formats[] = {"dflop", NULL};
    if (!strcmp(cmd, "profile") && !strcmp(opt, "--format"))
        list = profile_formats; /* then the folder, as files */
    size_t n = 0;
    for (int i = 0; list && list[i] && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? " " : "", list[i]);
}

/* Does the option take a value? */
static bool takes_value(const cmd_opts *c, const char *opt)
{
    if (opt[1] != '-') {
        const char *p = strchr(c->shortopts, opt[1]);
        return p && p[1] == ':';
    }
    for (const struct option *o = c->longopts; o->name; o++)
        if (!strcmp(o->name, opt + 2))
            return o->has_arg == required_argument;
    return false;
}

/* Every option of a command, as words: "--json --db= -s ..." (a long
 * option that takes a value ends in '=' when `eq`). */
static void option_words(const cmd_opts *c, bool eq, char *buf, size_t len)
{
    size_t n = 0;
    for (const struct option *o = c->longopts; o->name && n < len; o++)
        n += (size_t)snprintf(buf + n, len - n, "%s--%s%s", n ? " " : "", o->name,
                              eq && o->has_arg == required_argument ? "=" : "");
    for (const char *p = c->shortopts; *p && n < len; p++)
        if (*p != ':')
            n += (size_t)snprintf(buf + n, len - n, " -%c", *p);
}

/* The scenario keys that --set takes (sections too: `--set
 * parallel.llm={tp: 2}` is one). */
static void key_words(char *buf, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < mm_n_keys && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? " " : "", mm_keys[i].name);
}

/* A shell `case` over the enumerated keys: KEY) echo CHOICES ;; */
static void key_choice_cases(const char *indent)
{
    for (size_t i = 0; i < mm_n_keys; i++) {
        const mm_key *k = &mm_keys[i];
        if (k->type == MM_KT_BOOL) {
            printf("%s%s) echo true false ;;\n", indent, k->name);
        } else if (k->type == MM_KT_ENUM && k->choices) {
            printf("%s%s) echo", indent, k->name);
            for (int c = 0; k->choices[c]; c++)
                printf(" %s", k->choices[c]);
            printf(" ;;\n");
        }
    }
}

/* For each command, the options that take a value: a `case` pattern. */
static void value_option_pattern(const cmd_opts *c, char *buf, size_t len)
{
    size_t n = 0;
    for (const struct option *o = c->longopts; o->name && n < len; o++)
        if (o->has_arg == required_argument)
            n += (size_t)snprintf(buf + n, len - n, "%s--%s", n ? "|" : "", o->name);
    for (const char *p = c->shortopts; *p && n < len; p++)
        if (p[1] == ':')
            n += (size_t)snprintf(buf + n, len - n, "%s-%c", n ? "|" : "", *p);
}

/* The bash script's _mmsim_opt_choices (the values an option takes) and
 * _mmsim_takes_value (which options take one), from the commands' option
 * tables; buf: scratch of len bytes.  A part of bash_script. */
static void bash_option_tables(char *buf, size_t len)
{
    printf("_mmsim_opt_choices() { # COMMAND OPTION\n    case $1:$2 in\n");
    for (int i = 0; i < N_CMDS; i++)
        for (const struct option *o = cmds[i].longopts; o->name; o++) {
            char opt[64];
            snprintf(opt, sizeof opt, "--%s", o->name);
            option_choices(cmds[i].name, opt, buf, len);
            if (buf[0])
                printf("    %s:%s) echo %s ;;\n", cmds[i].name, opt, buf);
        }
    printf("    collective:-o) echo sum prod max min avg mulsum all ;;\n");
    option_choices("collective", "-d", buf, len);
    printf("    collective:-d) echo %s ;;\n", buf);
    printf("    *) return 1 ;;\n    esac\n}\n\n");
    printf("_mmsim_takes_value() { # COMMAND OPTION\n    case $1 in\n");
    for (int i = 0; i < N_CMDS; i++) {
        value_option_pattern(&cmds[i], buf, len);
        printf("    %s) case $2 in %s) return 0 ;; esac ;;\n", cmds[i].name, buf[0] ? buf : "--");
    }
    printf("    esac\n    return 1\n}\n\n");
}

/* The bash script's _mmsim_words (what to offer for the word being
 * completed: a command, a key, a value, an option or an operand) and the
 * complete line; buf: scratch of len bytes.  The end of bash_script. */
static void bash_words(char *buf, size_t len)
{
    printf("_mmsim_words() {\n"
           "    if [ \"$1\" -eq 2 ]; then\n"
           "        COMPREPLY=($(compgen -W 'run model collective workload sweep report plan profile help completion"
           " --help --version' -- \"$cur\"))\n"
           "        return\n"
           "    fi\n"
           "    case $cmd in\n"
           "    help) [ \"$1\" -eq 3 ] && COMPREPLY=($(compgen -W 'run model collective workload sweep"
           " report plan profile help scenario' -- \"$cur\")); return ;;\n"
           "    completion) [ \"$1\" -eq 3 ] && COMPREPLY=($(compgen -W 'bash zsh' -- \"$cur\"));"
           " return ;;\n"
           "    esac\n"
           "    # --opt=VALUE in one word: complete the value\n"
           "    local pre=\n"
           "    if [[ $cur == --*=* ]]; then prev=${cur%%%%=*}; pre=$prev=; cur=${cur#*=}\n"
           "    elif ! _mmsim_takes_value \"$cmd\" \"$prev\"; then prev=; fi\n"
           "    if [ -n \"$prev\" ]; then\n"
           "        if [ \"$prev\" = --set ] || [ \"$prev\" = -s ]; then\n"
           "            if [[ $cur == *=* ]]; then\n"
           "                words=$(_mmsim_key_choices \"${cur%%%%=*}\")\n"
           "                COMPREPLY=($(compgen -P \"$pre${cur%%%%=*}=\" -W \"$words\" -- \"${cur#*=}\"))\n"
           "            else\n"
           "                compopt -o nospace 2>/dev/null\n"
           "                COMPREPLY=($(compgen -P \"$pre\" -S = -W \"$_mmsim_keys\" -- \"$cur\"))\n"
           "            fi\n"
           "        elif words=$(_mmsim_opt_choices \"$cmd\" \"$prev\"); then\n"
           "            COMPREPLY=($(compgen -P \"$pre\" -W \"$words\" -- \"$cur\"))\n"
           "        else\n"
           "            compopt -o filenames 2>/dev/null\n"
           "            COMPREPLY=($(compgen -P \"$pre\" -f -- \"$cur\"))\n"
           "        fi\n"
           "        return\n"
           "    fi\n"
           "    if [[ $cur == -* ]]; then\n"
           "        case $cmd in\n");
    for (int i = 0; i < N_CMDS; i++) {
        option_words(&cmds[i], false, buf, len);
        printf("        %s) words='%s' ;;\n", cmds[i].name, buf);
    }
    printf("        *) words= ;;\n"
           "        esac\n"
           "        COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
           "        return\n"
           "    fi\n"
           "    case $cmd in\n");
    for (int i = 0; i < N_CMDS; i++)
        if (cmds[i].operands)
            printf("    %s) COMPREPLY=($(compgen -W '%s' -- \"$cur\")); [ ${#COMPREPLY[@]} -gt 0 ] && return ;;\n",
                   cmds[i].name, cmds[i].operands);
    printf("    esac\n"
           "    compopt -o filenames 2>/dev/null\n"
           "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
           "}\n"
           "complete -F _mmsim mmsim\n");
}

static void bash_script(void)
{
    static char buf[16384];
    printf("# bash completion for mmsim %s, made by `mmsim completion bash` from the\n"
           "# commands' option tables and the scenario keys; do not edit.\n", MMSIM_VERSION);
    key_words(buf, sizeof buf);
    printf("_mmsim_keys='%s'\n\n", buf);
    printf("_mmsim_key_choices() {\n    case $1 in\n");
    key_choice_cases("    ");
    printf("    esac\n}\n\n");
    bash_option_tables(buf, sizeof buf);
    printf("_mmsim() {\n"
           "    # the line split at blanks only: bash also breaks words at '=' (COMP_WORDBREAKS),\n"
           "    # which would cut --set KEY=VALUE in two\n"
           "    local line=${COMP_LINE:0:COMP_POINT}\n"
           "    local -a cw\n"
           "    read -ra cw <<< \"$line\"\n"
           "    [[ -z $line || $line == *[[:space:]] ]] && cw+=('')\n"
           "    local n=${#cw[@]}\n"
           "    local cur=${cw[n-1]} prev= cmd=${cw[1]} words\n"
           "    [ \"$n\" -gt 2 ] && prev=${cw[n-2]}\n"
           "    local word=$cur\n"
           "    COMPREPLY=()\n"
           "    _mmsim_words \"$n\"\n"
           "    # bash replaces the part of the word after its last '=': give it that part\n"
           "    if [[ $word == *=* && $COMP_WORDBREAKS == *=* ]]; then\n"
           "        local i strip=${word%%=*}=\n"
           "        for i in \"${!COMPREPLY[@]}\"; do COMPREPLY[i]=${COMPREPLY[i]#\"$strip\"}; done\n"
           "    fi\n"
           "}\n\n");
    bash_words(buf, sizeof buf);
}

/* zsh: _arguments specs, one per option: '--db=[...]:value:ACTION' for a
 * long option with a value (next word or after '='), '-s+:value:ACTION'
 * for a short one, '*' in front so that any may repeat (--set does). */
static void zsh_action(const char *cmd, const char *opt, char *buf, size_t len)
{
    static const char *const file_opts[] = {"--db", "--trace", "--megatron-args", "--megatron-model", "--cluster",
                                            "--output_file", "-J", "--model", NULL};
    char words[1024];
    option_choices(cmd, opt, words, sizeof words);
    bool file = false;
    for (int i = 0; file_opts[i]; i++)
        file |= !strcmp(opt, file_opts[i]);
    if (!strcmp(opt, "--set") || !strcmp(opt, "-s"))
        snprintf(buf, len, "_mmsim_set");
    else if (words[0])
        snprintf(buf, len, "(%s)", words);
    else
        snprintf(buf, len, "%s", file ? "_files" : " "); /* a number or a name: nothing to offer */
}

static void zsh_script(void)
{
    static char buf[16384];
    char action[1200];
    printf("#compdef mmsim\n"
           "# zsh completion for mmsim %s, made by `mmsim completion zsh` from the\n"
           "# commands' option tables and the scenario keys; do not edit.\n\n", MMSIM_VERSION);
    key_words(buf, sizeof buf);
    printf("_mmsim_set() {\n"
           "    local -a keys choices\n"
           "    keys=(%s)\n"
           "    if compset -P '*='; then\n"
           "        local key=${IPREFIX%%=}\n"
           "        case ${key##*=} in\n", buf);
    for (size_t i = 0; i < mm_n_keys; i++) {
        const mm_key *k = &mm_keys[i];
        if (k->type == MM_KT_BOOL)
            printf("        %s) choices=(true false) ;;\n", k->name);
        else if (k->type == MM_KT_ENUM && k->choices) {
            printf("        %s) choices=(", k->name);
            for (int c = 0; k->choices[c]; c++)
                printf("%s%s", c ? " " : "", k->choices[c]);
            printf(") ;;\n");
        }
    }
    printf("        esac\n"
           "        (( ${#choices} )) && compadd -a choices\n"
           "    else\n"
           "        compadd -S = -a keys\n"
           "    fi\n"
           "}\n\n");
    printf("_mmsim() {\n"
           "    local -a commands\n"
           "    commands=(run model collective workload sweep report plan profile help completion)\n"
           "    if (( CURRENT == 2 )); then\n"
           "        compadd -a commands\n"
           "        compadd -- --help --version\n"
           "        return\n"
           "    fi\n"
           "    local cmd=$words[2]\n"
           "    shift words; (( CURRENT-- ))\n"
           "    case $cmd in\n"
           "    help) _arguments '1:command:(run model collective workload sweep report plan profile help scenario)' ;;\n"
           "    completion) _arguments '1:shell:(bash zsh)' ;;\n");
    for (int i = 0; i < N_CMDS; i++) {
        const cmd_opts *c = &cmds[i];
        printf("    %s) _arguments -s", c->name);
        for (const struct option *o = c->longopts; o->name; o++) {
            char opt[64];
            snprintf(opt, sizeof opt, "--%s", o->name);
            if (o->has_arg == required_argument) {
                zsh_action(c->name, opt, action, sizeof action);
                printf(" \\\n        '*--%s=:value:%s'", o->name, action);
            } else {
                printf(" \\\n        '*--%s'", o->name);
            }
        }
        for (const char *p = c->shortopts; *p; p++) {
            if (*p == ':')
                continue;
            char opt[3] = {'-', *p, '\0'};
            if (takes_value(c, opt)) {
                zsh_action(c->name, opt, action, sizeof action);
                printf(" \\\n        '*-%c+:value:%s'", *p, action);
            } else {
                printf(" \\\n        '*-%c'", *p);
            }
        }
        if (c->operands)
            printf(" \\\n        '*:operand:(%s)'", c->operands);
        else
            printf(" \\\n        '*:file:_files'");
        printf(" ;;\n");
    }
    printf("    esac\n"
           "}\n\n"
           "_mmsim \"$@\"\n");
}

int mm_cli_completion(int argc, char **argv)
{
    if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))
        return mm_cli_help("completion");
    if (argc != 2)
        return mm_cli_bad("completion", "<cli>", "takes one shell: bash or zsh");
    if (!strcmp(argv[1], "bash"))
        bash_script();
    else if (!strcmp(argv[1], "zsh"))
        zsh_script();
    else
        return mm_cli_bad("completion", "<shell>", "bash or zsh, not '%s'", argv[1]);
    return 0;
}
