// The frame of meshtune's HTML pages (the tuning report, meshtuned's HTTP pages): one
// self-contained document with its style inline, no scripts, no external references; and
// the escaping every text put into one goes through.
#ifndef MESHTUNE_ENGINE_REPORT_HTML_PAGE_H_
#define MESHTUNE_ENGINE_REPORT_HTML_PAGE_H_

#include <string>

namespace meshtune::engine {

// `text` with &, <, >, " and ' replaced by entities: safe in HTML and SVG text and in
// attribute values.
std::string HtmlEscape(const std::string& text);

// A whole HTML5 document: UTF-8, the page's `title` (escaped here), the shared inline style
// sheet, an empty icon (so that a browser asks for no favicon), and `body_html` (already HTML)
// inside <body>.
std::string HtmlDocument(const std::string& title, const std::string& body_html);

}  // namespace meshtune::engine

#endif  // MESHTUNE_ENGINE_REPORT_HTML_PAGE_H_
