#include "engine/report/html_page.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace meshtune::engine {

namespace {

constexpr char kStyle[] = R"css(
body { font-family: sans-serif; margin: 1.5em auto; max-width: 72em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; border-bottom: 1px solid #ccc; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.missing, .note { color: #666; font-style: italic; }
nav a { margin-right: 1em; }
svg { display: block; margin: 0.5em 0; }
)css";

}  // namespace

std::string HtmlEscape(const std::string& text) {
  return absl::StrReplaceAll(
      text, {{"&", "&amp;"}, {"<", "&lt;"}, {">", "&gt;"}, {"\"", "&quot;"}, {"'", "&#39;"}});
}

std::string HtmlDocument(const std::string& title, const std::string& body_html) {
  return absl::StrCat("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n",
                      "<link rel=\"icon\" href=\"data:,\">\n<title>", HtmlEscape(title),
                      "</title>\n<style>", kStyle, "</style>\n</head>\n<body>\n", body_html,
                      "</body>\n</html>\n");
}

}  // namespace meshtune::engine
