// Where a model named as vLLM takes it lives on this machine: builtin:NAME, a local directory or
// config.json, or a Hugging Face repo id ("Qwen/Qwen3-8B") already in the Hugging Face cache,
// as huggingface_hub (and so vLLM, transformers, `hf download`) stores it:
//   <cache>/models--Qwen--Qwen3-8B/refs/<revision>       the commit the revision points to
//   <cache>/models--Qwen--Qwen3-8B/snapshots/<commit>/   config.json, *.safetensors, tokenizer
// ctxpar never downloads: a repo id that is not cached is an error saying how to fetch it.
#pragma once

#include <string>

namespace ctxpar::model {

// The Hugging Face hub cache directory: $HF_HUB_CACHE, else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub (huggingface_hub's order).
std::string hf_hub_cache_dir();

// `model` unchanged when it is builtin:NAME or exists on disk (a local path wins, as in vLLM);
// else, for a repo id (one or two names of letters, digits, '.', '_' and '-' joined by '/'), its
// cached snapshot directory at `revision` ("" = "main"; a branch or tag name with a refs/ file,
// or a commit hash with a snapshot), in `cache_dir` ("" = hf_hub_cache_dir(); vLLM's
// --download-dir). Throws InputError naming the model, the cache directory searched and the
// command that downloads it when it is neither, or when the snapshot holds no config.json.
std::string locate_model(const std::string& model, const std::string& revision = "",
                         const std::string& cache_dir = "");

// vLLM's --tokenizer: "" (the model's), existing paths and names that are no repo id unchanged
// (loading the tokenizer checks them); a repo id becomes its cached snapshot at `revision`
// (--tokenizer-revision), which must hold tokenizer.json. Throws InputError as locate_model
// does.
std::string locate_tokenizer(const std::string& tokenizer, const std::string& revision = "",
                             const std::string& cache_dir = "");

}  // namespace ctxpar::model
