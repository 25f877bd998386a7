/* padding.h - how a micro-batch's sequences are laid out for the LLM: the
 * one enum that a framework profile's `padding` default
 * (model/framework.h), the scenario's train.padding override and micro-
 * batch formation (workload/batch.h) share.
 *   none        varlen (FlashAttention's cu_seqlens, or packing without
 *               pad tokens): each sample costs its own tokens, attention
 *               the sum of s_i^2
 *   longest     every sample padded to the micro-batch's longest one (the
 *               Hugging Face collators: LLaVA's DataCollatorForSupervised-
 *               Dataset, InternVL's concat_pad_data_collator; Megatron's
 *               multimodal TaskEncoder.batch without --dataloader-seq-length):
 *               n * max tokens
 *   max_length  every sample padded to seq_len (tokenizer padding=
 *               "max_length"; Megatron's GPTDataset, whose samples are
 *               --seq-length tokens): n * seq_len tokens
 * Packed batching is varlen by construction and ignores it.
 * Not for: counting the padded tokens (workload/batch.c). */
#ifndef MM_PADDING_H
#define MM_PADDING_H

typedef enum mm_padding { MM_PAD_NONE, MM_PAD_LONGEST, MM_PAD_MAX_LENGTH } mm_padding;
/* "none", "longest", "max_length", NULL (model/framework.c) */
extern const char *const mm_padding_names[];

#endif
