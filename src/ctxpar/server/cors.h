// Cross-origin (CORS) answers as vLLM 0.34 gives them: Starlette 1.x's CORSMiddleware over
// --allowed-origins, --allow-credentials, --allowed-methods and --allowed-headers. vLLM's
// defaults allow no origin (a browser page on another origin cannot read the API), every method
// and every header, without credentials.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ctxpar::server {

struct CorsOptions {
  std::vector<std::string> origins;          // "*": any origin
  std::vector<std::string> methods = {"*"};  // "*": every method
  std::vector<std::string> headers = {"*"};  // "*": every request header
  bool credentials = false;                  // Access-Control-Allow-Credentials
};

// One of --allowed-origins / --allowed-methods / --allowed-headers: vLLM parses the value with
// json.loads into a list of strings. Throws InputError naming `flag` for anything else.
std::vector<std::string> parse_cors_list(const std::string& flag, const std::string& value);

using HeaderList = std::vector<std::pair<std::string, std::string>>;

class CorsPolicy {
 public:
  explicit CorsPolicy(CorsOptions options);

  struct Preflight {
    int status;        // 200, or 400 when the origin, method or headers are not allowed
    std::string body;  // "OK" or "Disallowed CORS origin, method, ..."
    HeaderList headers;
  };
  // The answer to a preflight request: OPTIONS carrying Origin and
  // Access-Control-Request-Method (and maybe Access-Control-Request-Headers, a comma-separated
  // list, and Access-Control-Request-Private-Network, which is never allowed).
  Preflight preflight(const std::string& origin, const std::string& method,
                      const std::optional<std::string>& request_headers,
                      bool private_network) const;

  // The headers to set on any other response to a request carrying Origin `origin`; `vary` is
  // the response's own Vary header (empty: none), which the returned Vary extends.
  HeaderList response_headers(const std::string& origin, const std::string& vary) const;

 private:
  bool allowed_origin(const std::string& origin) const;

  CorsOptions options_;
  bool any_origin_, any_header_;
  std::vector<std::string> methods_;       // "*" expanded to every method
  std::vector<std::string> header_names_;  // lowercase, the CORS-safelisted ones included
  HeaderList preflight_headers_;           // what every preflight answer carries
};

}  // namespace ctxpar::server
