// A small well-formedness check for the SVG the plot writer emits: balanced tags, quoted attributes, finite numbers.
#pragma once

#include <cctype>
#include <string>
#include <vector>

namespace tlbsim::plot::testing {

// Returns "" when `xml` is one well-formed element tree, else what is wrong and where.
inline std::string xml_problem(const std::string& xml) {
  std::vector<std::string> open;
  std::size_t i = 0, roots = 0;
  while (i < xml.size()) {
    if (xml[i] != '<') {
      if (xml[i] == '&') {
        const std::size_t semi = xml.find(';', i);
        if (semi == std::string::npos || semi - i > 6) return "bare & at " + std::to_string(i);
      }
      if (open.empty() && !std::isspace(static_cast<unsigned char>(xml[i])))
        return "text outside the root at " + std::to_string(i);
      ++i;
      continue;
    }
    const std::size_t end = xml.find('>', i);
    if (end == std::string::npos) return "unterminated tag at " + std::to_string(i);
    std::string tag = xml.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.empty()) return "empty tag";
    if (tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (open.empty() || open.back() != name)
        return "</" + name + "> closes " + (open.empty() ? "nothing" : open.back());
      open.pop_back();
      continue;
    }
    const bool self_closing = tag.back() == '/';
    if (self_closing) tag.pop_back();
    const std::string name = tag.substr(0, tag.find_first_of(" \n\t"));
    std::size_t quotes = 0;
    for (char c : tag) quotes += c == '"' ? 1 : 0;
    if (quotes % 2 != 0) return "unbalanced quotes in <" + name + ">";
    if (tag.find("<") != std::string::npos) return "< inside <" + name + ">";
    if (open.empty()) ++roots;
    if (!self_closing) open.push_back(name);
  }
  if (!open.empty()) return "<" + open.back() + "> never closed";
  if (roots != 1) return std::to_string(roots) + " root elements";
  for (const char* bad : {"nan", "inf", "NaN", "Inf"}) {
    if (xml.find(std::string("\"") + bad) != std::string::npos ||
        xml.find(std::string(",") + bad) != std::string::npos ||
        xml.find(std::string(" ") + bad + ",") != std::string::npos) {
      return std::string("a non-finite number (") + bad + ")";
    }
  }
  return "";
}

}  // namespace tlbsim::plot::testing
