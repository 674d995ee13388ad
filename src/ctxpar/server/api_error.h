// ApiError: an error answered to an HTTP client in vLLM's shape,
// {"error": {"message", "type", "param", "code"}}, with the status vLLM uses for it
// (400 BadRequestError for invalid input, 404 NotFoundError for an unknown model, ...).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>

namespace ctxpar::server {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string type, const std::string& message,
           std::optional<std::string> param = std::nullopt);

  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::optional<std::string>& param() const { return param_; }
  nlohmann::json to_json() const;

 private:
  int status_;
  std::string type_;
  std::optional<std::string> param_;
};

// 400 BadRequestError (vLLM's VLLMValidationError, ValueError, pydantic validation).
ApiError bad_request(const std::string& message, std::optional<std::string> param = std::nullopt);
// 404 NotFoundError for a model name this server does not serve, param "model".
ApiError model_not_found(const std::string& model);
// 500 InternalServerError.
ApiError internal_error(const std::string& message);
// 503 ServiceUnavailableError: loading, or the engine is dead.
ApiError unavailable(const std::string& message);
// Any other status, with the HTTP reason phrase as the type (as vLLM's HTTPException handler).
ApiError http_error(int status, const std::string& message);

}  // namespace ctxpar::server
