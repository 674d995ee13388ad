// What the schema compiler refuses: an unsupported keyword is an error naming it, never ignored.
#include <gtest/gtest.h>

#include <string>

#include "ctxpar/core/error.h"
#include "structured/match_util.h"

namespace ctxpar::structured {
namespace {

std::string error_of(const char* schema) {
  try {
    compile_json_schema(nlohmann::ordered_json::parse(schema));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(SchemaCompiler, UnsupportedKeywordsAreNamed) {
  // (pattern and format are supported; a number is no valid value of either.)
  for (const char* keyword : {"pattern", "format", "dependentRequired", "uniqueItems", "contains",
                              "patternProperties", "multipleOf", "not", "if"}) {
    const std::string schema =
        std::string(R"({"type": "object", "properties": {"a": {"type": "string", ")") + keyword +
        R"(": 1}}})";
    const std::string message = error_of(schema.c_str());
    EXPECT_NE(message.find(std::string("`") + keyword + "`"), std::string::npos) << message;
    EXPECT_NE(message.find("/properties/a"), std::string::npos) << message;
  }
  EXPECT_EQ(error_of(R"({"type": "number", "minimum": 1})"), "");  // bounded numbers: supported
  EXPECT_NE(error_of(R"({"type": "number", "minimum": 1, "exclusiveMaximum": 1})"), "");
  EXPECT_NE(error_of(R"({"allOf": [{"type": "string"}, {"maxLength": 2}]})").find("`allOf`"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"$ref": "https://example.com/s.json"})").find("local"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "object", "properties": {}, "required": ["a"]})").find("\"a\""),
            std::string::npos);
}

TEST(SchemaCompiler, AnnotationsAreIgnored) {
  EXPECT_EQ(error_of(R"({"type": "string", "title": "T", "description": "d", "default": "x",
                         "examples": ["y"], "$schema": "https://json-schema.org/draft/2020-12/schema"})"),
            "");
}

TEST(SchemaCompiler, UnsatisfiableSchemasAreRefused) {
  EXPECT_NE(error_of(R"({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"})"), "");
  EXPECT_NE(error_of(R"({"anyOf": [{"$ref": "#"}]})"), "");
  EXPECT_NE(error_of("false"), "");
  EXPECT_NE(error_of(R"({"type": "integer", "minimum": 5, "maximum": 4})"), "");
  EXPECT_NE(error_of(R"({"type": "string", "minLength": 5, "maxLength": 4})"), "");
  EXPECT_NE(error_of(R"({"type": "array", "prefixItems": [{}, {}], "maxItems": 1})"), "");
  EXPECT_NE(error_of(R"({"type": "color"})"), "");
  EXPECT_NE(error_of(R"({"properties": {"a": {}, "b": {}}, "required": ["a", "b"],
                         "maxProperties": 1})")
                .find("at least 2 properties (`required`) and at most 1"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"type": "object", "minProperties": 3, "maxProperties": 2})")
                .find("(`minProperties`)"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"properties": {"a": {}}, "additionalProperties": false,
                         "minProperties": 2})")
                .find("`minProperties` 2 is more than the 1 properties"),
            std::string::npos);
  EXPECT_EQ(error_of(R"({"properties": {"a": {}}, "minProperties": 2,
                         "additionalProperties": true})"),
            "");
}

}  // namespace
}  // namespace ctxpar::structured
