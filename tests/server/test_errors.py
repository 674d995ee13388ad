"""Bad requests over raw HTTP get vLLM's status and error shape, and the server stays up:
malformed JSON, wrong types, invalid values, unknown model, over-long prompts, a missing or
wrong API key, a non-JSON content type, an oversized body, an unknown route."""

import json
import unittest

import server_fixture as fx

KEY = "sk-ctxpar-test"
KEY2 = "sk-ctxpar-second"
AUTH = {"Authorization": f"Bearer {KEY}"}


class Errors(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = fx.Server(["--api-key", KEY, KEY2, "--max-request-body-bytes", "16KiB"],
                               env={"VLLM_API_KEY": "sk-ignored-beside-the-flag"}).__enter__()

    @classmethod
    def tearDownClass(cls):
        fx.stop(cls.server)

    def post(self, body=None, path="/v1/completions", raw=None, headers=AUTH):
        return self.server.request("POST", path, body=body, raw=raw, headers=headers)

    def assert_error(self, response, status, error_type, *fragments, param=None):
        got_status, body, headers = response
        self.assertEqual(got_status, status, body)
        self.assertTrue(headers.get("Content-Type", "").startswith("application/json"), headers)
        error = body["error"]
        self.assertEqual(set(error), {"message", "type", "param", "code"})
        self.assertEqual(error["type"], error_type)
        self.assertEqual(error["code"], status)
        for f in fragments:
            self.assertIn(f, error["message"])
        if param is not None:
            self.assertEqual(error["param"], param)

    def tearDown(self):
        # Whatever the request did, the server still answers and serves.
        status, body, _ = self.server.request("GET", "/health")
        self.assertEqual(status, 200, body)
        status, body, _ = self.post({"prompt": [1, 2, 3], "max_tokens": 2})
        self.assertEqual(status, 200, body)
        self.assertEqual(body["usage"]["completion_tokens"] <= 2, True)

    def test_malformed_json(self):
        self.assert_error(self.post(raw='{"prompt": "hi", "max_tokens": '), 400, "BadRequestError",
                          "JSON decode error")
        self.assert_error(self.post(raw="[1, 2]"), 400, "BadRequestError", "JSON object")

    def test_wrong_types(self):
        for field, value, want in [("max_tokens", "ten", "valid integer"),
                                   ("temperature", "hot", "valid number"),
                                   ("stream", "yes", "valid boolean"),
                                   ("n", 1.5, "fractional"),
                                   ("stop", 7, "string"),
                                   ("prompt", 17, "prompt")]:
            with self.subTest(field=field):
                body = {"prompt": "hi", field: value}
                self.assert_error(self.post(body), 400, "BadRequestError", field, want, param=field)
        self.assert_error(self.post({"prompt": [1, -2]}), 400, "BadRequestError",
                          "greater than or equal to 0", param="prompt")

    def test_invalid_values(self):
        self.assert_error(self.post({"prompt": "hi", "max_tokens": -3}), 400, "BadRequestError",
                          "max_tokens must be at least 1, got -3.", param="max_tokens")
        self.assert_error(self.post({"prompt": "hi", "temperature": 2.5}), 400, "BadRequestError",
                          "temperature must be in [0, 2]", param="temperature")
        self.assert_error(self.post({"prompt": "hi", "top_p": 0}), 400, "BadRequestError",
                          "top_p must be in (0, 1]", param="top_p")
        self.assert_error(self.post({"prompt": "hi", "min_tokens": 9, "max_tokens": 4}), 400,
                          "BadRequestError", "min_tokens must be less than or equal to max_tokens=4")
        # --max-logprobs (default 20) holds logprobs and prompt_logprobs; -1 is the vocabulary.
        self.assert_error(self.post({"prompt": "hi", "logprobs": 21}), 400, "BadRequestError",
                          "Requested sample logprobs of 21, which is greater than max allowed: 20",
                          param="logprobs")
        self.assert_error(self.post({"prompt": "hi", "logprobs": -1}), 400, "BadRequestError",
                          "Requested sample logprobs of 512", param="logprobs")  # the vocabulary
        self.assert_error(self.post({"prompt": "hi", "prompt_logprobs": 21}), 400,
                          "BadRequestError", "Requested prompt logprobs of 21",
                          param="prompt_logprobs")
        self.assert_error(self.post({"prompt": "hi", "echo": True, "logprobs": 30}), 400,
                          "BadRequestError", "Requested sample logprobs of 30", param="logprobs")
        self.assert_error(self.post({"messages": [{"role": "user", "content": "hi"}],
                                     "logprobs": True, "top_logprobs": 21},
                                    path="/v1/chat/completions"), 400, "BadRequestError",
                          "max allowed: 20", param="top_logprobs")
        self.assert_error(self.post({"prompt": "hi", "prompt_logprobs": 2, "stream": True}), 400,
                          "BadRequestError", "`prompt_logprobs` are not available when "
                          "`stream=True`.", param="prompt_logprobs")
        self.assert_error(self.post({"prompt": "hi", "max_tokens": 0}), 400, "BadRequestError",
                          "max_tokens must be at least 1, got 0.", param="max_tokens")
        self.assert_error(self.post({"prompt": "hi", "stop": ["ok", ""]}), 400, "BadRequestError",
                          "stop cannot contain an empty string")
        self.assert_error(self.post({"prompt": "hi", "n": 2, "temperature": 0}), 400,
                          "BadRequestError", "n must be 1 when using greedy sampling")
        self.assert_error(self.post({"prompt": "hi", "stream_options": {"include_usage": True}}),
                          400, "BadRequestError", "Stream options can only be defined when")
        self.assert_error(self.post({"prompt": ""}), 400, "BadRequestError", "non-empty")
        self.assert_error(self.post({"prompt": [1, 600]}), 400, "BadRequestError",
                          "Token id 600 is out of vocabulary")
        self.assert_error(self.post({"messages": []}, path="/v1/chat/completions"), 400,
                          "BadRequestError", "at least 1 item", param="messages")

    def test_unknown_model(self):
        self.assert_error(self.post({"model": "gpt-9", "prompt": "hi"}), 404, "NotFoundError",
                          "The model `gpt-9` does not exist.", param="model")
        self.assert_error(
            self.post({"model": "gpt-9", "messages": [{"role": "user", "content": "hi"}]},
                      path="/v1/chat/completions"), 404, "NotFoundError", "gpt-9")

    def test_over_long_prompt(self):
        # max_model_len 512: a longer prompt is refused; a shorter one gets at most what the
        # context leaves (vLLM 0.34 clamps max_tokens).
        self.assert_error(self.post({"prompt": [5] * 513}), 400, "BadRequestError",
                          "This model's maximum context length is 512 tokens. However, your "
                          "prompt contains 513 input tokens", param="input_tokens")
        status, body, _ = self.post({"prompt": [5] * 509, "max_tokens": 16, "ignore_eos": True})
        self.assertEqual(status, 200, body)
        self.assertEqual(body["usage"]["completion_tokens"], 3)
        self.assertEqual(body["choices"][0]["finish_reason"], "length")
        # truncate_prompt_tokens -1 keeps max_model_len - 1 tokens; a limit keeps one side.
        status, body, _ = self.post({"prompt": [5] * 700, "truncate_prompt_tokens": -1,
                                     "ignore_eos": True})
        self.assertEqual(status, 200, body)
        self.assertEqual(body["usage"]["prompt_tokens"], 511)
        self.assertEqual(body["usage"]["completion_tokens"], 1)
        prompt = list(range(1, 41))
        for side, want in (("left", prompt[-10:]), ("right", prompt[:10]), (None, prompt[:10])):
            req = {"prompt": prompt, "truncate_prompt_tokens": 10, "max_tokens": 1,
                   "return_token_ids": True}
            if side:
                req["truncation_side"] = side
            status, body, _ = self.post(req)
            self.assertEqual(status, 200, body)
            self.assertEqual(body["choices"][0]["prompt_token_ids"], want, side)
        status, body, _ = self.post(
            {"messages": [{"role": "user", "content": "x" * 80}], "truncate_prompt_tokens": 12,
             "truncation_side": "left", "max_tokens": 1}, path="/v1/chat/completions")
        self.assertEqual(status, 200, body)
        self.assertEqual(body["usage"]["prompt_tokens"], 12)
        self.assert_error(self.post({"prompt": prompt, "truncate_prompt_tokens": 600}), 400,
                          "BadRequestError", "truncate_prompt_tokens=600 cannot be greater than "
                          "max_model_len = 512", param="truncate_prompt_tokens")
        self.assert_error(self.post({"prompt": [5] * 10, "max_tokens": 600}), 400,
                          "BadRequestError", "max_tokens=600 cannot be greater than "
                          "max_model_len=512", param="max_tokens")
        status, body, _ = self.post({"prompt": [5] * 496})
        self.assertEqual(status, 200, body)

    def test_api_key(self):
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": KEY}):
            with self.subTest(headers=headers):
                status, body, _ = self.post({"prompt": "hi"}, headers=headers)
                self.assertEqual((status, body), (401, {"error": "Unauthorized"}))
        status, body, _ = self.server.request("GET", "/v1/models")
        self.assertEqual((status, body), (401, {"error": "Unauthorized"}))
        for auth in (f"Bearer {KEY}", f"bearer {KEY2}", f"BEARER {KEY}"):
            status, _, _ = self.server.request("GET", "/v1/models", headers={"Authorization": auth})
            self.assertEqual(status, 200, auth)
        for auth in ("Bearer sk-ignored-beside-the-flag", f"Bearer  {KEY}",
                     f"Token {KEY}", f"Bearer {KEY}{KEY2}"):
            status, _, _ = self.server.request("GET", "/v1/models", headers={"Authorization": auth})
            self.assertEqual(status, 401, auth)
        # vLLM's other guarded prefixes answer 401 before their 404.
        for path in ("/v2/rerank", "/inference/v1/generate", "/cohere/v2/chat"):
            status, body, _ = self.server.request("POST", path, {"prompt": "hi"})
            self.assertEqual((status, body), (401, {"error": "Unauthorized"}), path)
            self.assertEqual(self.server.request("POST", path, {}, headers=AUTH)[0], 404, path)
        # Outside them no key is needed.
        self.assertEqual(self.server.request("GET", "/metrics")[0], 200)
        status, body, _ = self.server.request("POST", "/invocations",
                                              {"prompt": "hi", "max_tokens": 1})
        self.assertEqual(status, 200, body)

    def test_vllm_api_key_guards_when_no_flag_does(self):
        with fx.Server(env={"VLLM_API_KEY": KEY2}) as server:
            self.assertEqual(server.request("GET", "/v1/models")[0], 401)
            headers = {"Authorization": f"Bearer {KEY2}"}
            self.assertEqual(server.request("GET", "/v1/models", headers=headers)[0], 200)
        with fx.Server(env={"VLLM_API_KEY": ""}) as server:
            self.assertEqual(server.request("GET", "/v1/models")[0], 200)

    def test_content_type(self):
        for content_type in ("text/plain", "application/x-www-form-urlencoded", ""):
            with self.subTest(content_type=content_type):
                self.assert_error(
                    self.post(raw=json.dumps({"prompt": "hi"}),
                              headers={**AUTH, "Content-Type": content_type}),
                    415, "Unsupported Media Type", "Only 'application/json' is allowed")
        status, _, _ = self.post(raw=json.dumps({"prompt": "hi", "max_tokens": 1}),
                                 headers={**AUTH, "Content-Type": "application/json; charset=utf-8"})
        self.assertEqual(status, 200)

    def test_oversized_body(self):
        self.assert_error(self.post({"prompt": "x" * 20000}), 413, "Payload Too Large",
                          "larger than the limit of 16384 bytes")

    def test_unknown_route(self):
        self.assert_error(self.server.request("GET", "/v1/nothing-here", headers=AUTH), 404,
                          "Not Found", "Not Found")


if __name__ == "__main__":
    unittest.main()
