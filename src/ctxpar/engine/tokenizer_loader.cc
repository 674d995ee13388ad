#include "ctxpar/engine/tokenizer_loader.h"

#include <algorithm>
#include <filesystem>

#include "ctxpar/model/model_config.h"
#include "ctxpar/tokenizer/byte_tokenizer.h"

namespace ctxpar::engine {

std::string model_directory(const std::string& model) {
  namespace fs = std::filesystem;
  if (model::is_builtin_model(model)) return std::string();
  return fs::is_directory(model) ? model : fs::path(model).parent_path().string();
}

tokenizer::LoadedTokenizer load_tokenizer(const std::string& model,
                                          const std::string& tokenizer_dir) {
  const model::ModelConfig config = model::resolve_model_config(model);
  tokenizer::LoadedTokenizer out;
  if (model::is_builtin_model(model) && tokenizer_dir.empty()) {
    std::optional<int32_t> bos;
    if (config.bos_token_id >= 0) bos = static_cast<int32_t>(config.bos_token_id);
    out.tokenizer =
        std::make_shared<tokenizer::ByteTokenizer>(static_cast<int32_t>(config.vocab_size), bos);
    out.bos_token_id = bos;
    if (!config.eos_token_ids.empty())
      out.eos_token_id = static_cast<int32_t>(config.eos_token_ids[0]);
  } else {
    const std::string model_dir = model_directory(model);
    out =
        tokenizer::load_hf_tokenizer(tokenizer_dir.empty() ? model_dir : tokenizer_dir, model_dir);
  }
  for (const int64_t id : config.eos_token_ids) {
    const auto eos = static_cast<int32_t>(id);
    if (std::find(out.eos_token_ids.begin(), out.eos_token_ids.end(), eos) ==
        out.eos_token_ids.end()) {
      out.eos_token_ids.push_back(eos);
    }
  }
  return out;
}

}  // namespace ctxpar::engine
