// What every emitter returns: named file contents plus notes for the README, so that
// emitters never touch the disk (launch/output_dir.h writes them, all or nothing).
#pragma once

#include <string>
#include <vector>

namespace shardplan::launch {

struct EmittedFile {
  std::string name;         // file name inside the output directory, no slashes
  std::string text;         // full contents
  bool executable = false;  // launch scripts get mode 0755
};

struct Emitted {
  std::vector<EmittedFile> files;
  std::vector<std::string> notes;  // one line each: approximations and things to fill in

  void Add(std::string name, std::string text, bool executable = false) {
    files.push_back({std::move(name), std::move(text), executable});
  }
  void Note(std::string line) { notes.push_back(std::move(line)); }
  void Append(Emitted other) {
    for (auto& f : other.files) files.push_back(std::move(f));
    for (auto& n : other.notes) notes.push_back(std::move(n));
  }
};

}  // namespace shardplan::launch
