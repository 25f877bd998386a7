/* mgscript.h - reading a Megatron-LM launch script (bash) without running
 * it: the words of the command that starts the training entry script
 * (`torchrun ... pretrain_gpt.py ARGS`), with the script's literal
 * variables expanded, each word with the line it was written on
 * (mgscript.c says what is understood and what is refused).
 * Not for: what the arguments mean (megatron.c). */
#ifndef MM_SCENARIO_MGSCRIPT_H
#define MM_SCENARIO_MGSCRIPT_H

#include "util/err.h"

typedef struct mm_mg_word {
    char *text;
    int line;
    /* 0, or the line of an `if`/`case` mmsim could not decide whose branch
     * assigned (directly or through other variables) a variable this word
     * was expanded from: its value may be another */
    int undecided;
} mm_mg_word;

typedef struct mm_mg_words {
    mm_mg_word *w;
    int n, cap;
} mm_mg_words;

/* Appends a word of len bytes; 0, or -1 when out of memory. */
int mm_mg_words_push(mm_mg_words *ws, const char *text, size_t len, int line);
void mm_mg_words_free(mm_mg_words *ws);

/* Reads the script `path`: *args gets the words after the entry script of
 * its one launch command, entry (len bytes) the entry script as written
 * and *entry_line its line; *notes (cleared first) one sentence per `if`
 * or `case` whose test mmsim could not decide, with its line, saying how it
 * was read.  A word that depends on such a branch's assignments carries
 * its line (mm_mg_word.undecided): the reader of the arguments refuses it
 * where it matters.  Returns 0 or
 * -code (MM_EINPUT naming the file, the line and what is not understood: a
 * loop, a second launch, no launch at all). */
int mm_mg_script_read(const char *path, mm_mg_words *args, char *entry, size_t len, int *entry_line,
                      mm_mg_words *notes, mm_err *err);

#endif
