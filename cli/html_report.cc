#include "cli/html_report.h"

#include "cli/command.h"
#include "cli/html_assets.h"
#include "planner/io/atomic_file.h"

namespace shardplan::cli {
namespace {

// Text inside <script>: "</" would end the element early (JSON allows "<\/").
std::string ScriptSafe(std::string s) {
  for (size_t at = s.find("</"); at != std::string::npos; at = s.find("</", at + 3)) s.replace(at, 2, "<\\/");
  return s;
}

std::string HtmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// A POSIX shell word: bare when it needs no quoting, else single-quoted.
std::string ShellWord(const std::string& a) {
  if (!a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=,:@+%") ==
                        std::string::npos)
    return a;
  std::string q = "'";
  for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

std::string RenderHtml(const HtmlReport& r) {
  std::string command;
  for (const std::string& a : CommandLine()) command += (command.empty() ? "" : " ") + ShellWord(a);
  const nlohmann::json page = {{"kind", r.kind}, {"title", r.title}, {"command", command}, {"inputs", r.inputs}};
  std::string html;
  html.reserve(kChartJs.size() + kReportJs.size() + 65536);
  html += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  html += "<meta name=\"generator\" content=\"shardplan\">\n<title>" + HtmlEscape(r.title) + "</title>\n";
  html += "<style>\n" + std::string(kReportCss) + "</style>\n";
  // Errors are recorded before any library runs, so a self-check can report them.
  html += "<script>window.shardplanErrors=[];addEventListener('error',function(e){shardplanErrors.push(String(e.message));});</script>\n";
  html += "<script>\n" + ScriptSafe(std::string(kChartJs)) + "\n</script>\n</head>\n<body>\n";
  html += "<script type=\"application/json\" id=\"report-page\">" + ScriptSafe(page.dump()) + "</script>\n";
  html += "<script type=\"application/json\" id=\"report-data\">" + ScriptSafe(r.data.dump()) + "</script>\n";
  html += "<main id=\"report\"></main>\n<script>\n" + ScriptSafe(std::string(kReportJs)) + "\n</script>\n</body>\n</html>\n";
  return html;
}

Status WriteHtml(const std::string& path, const HtmlReport& r) {
  Status s = WriteFileAtomically(path, RenderHtml(r));
  if (!s.ok()) return Status(s.code(), "--html: " + s.message() + "; give a path in a writable folder");
  return s;
}

}  // namespace shardplan::cli
