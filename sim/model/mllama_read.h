/* mllama_read.h - reading Llama 3.2 Vision's (Mllama's) vision tower and
 * the tiling and projector around it, for the composite reader
 * (mllm_read.c).  Internal to sim/model.
 * Not for: costs (mllm.c, llm.c), the text model (llm_read.c). */
#ifndef MM_MLLAMA_READ_H
#define MM_MLLAMA_READ_H

#include "model/hf.h"
#include "model/mllm.h"

/* MllamaVisionConfig's mapping into e (absent keys: the class defaults,
 * hf.c); `r` names the mapping.  MM_EINPUT naming the key otherwise. */
int mm_mllama_read_tower(const mm_hf *r, mm_encoder *e);

/* Once m's LLM and tower are read: the image tiling (supported aspect
 * ratios as grids, max_num_tiles tiles, no base image), the projector
 * (multi_modal_projector: one biased Linear from vision_output_dim, the
 * last block's and intermediate_layers_indices' features concatenated,
 * to the LLM's width) and the image states the LLM's cross-attention
 * blocks attend per sequence (one image: max_num_tiles x the tower's
 * tokens).  `vr` names the vision_config mapping. */
int mm_mllama_finish(const mm_hf *vr, mm_model *m);

#endif
