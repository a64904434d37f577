// Little-endian binary encoding for controller messages. The Reader checks
// every bound: bytes from the network never make it read past the end.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace hvd {

class WireWriter {
 public:
  void U8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void I32(int32_t v) { Raw(&v, sizeof(v)); }
  void I64(int64_t v) { Raw(&v, sizeof(v)); }
  void F64(double v) { Raw(&v, sizeof(v)); }
  void Str(const std::string& s) {
    I64(static_cast<int64_t>(s.size()));
    out_.append(s);
  }
  void I64Vec(const std::vector<int64_t>& v) {
    I64(static_cast<int64_t>(v.size()));
    Raw(v.data(), v.size() * sizeof(int64_t));
  }
  void I32Vec(const std::vector<int32_t>& v) {
    I64(static_cast<int64_t>(v.size()));
    Raw(v.data(), v.size() * sizeof(int32_t));
  }
  std::string Take() { return std::move(out_); }

 private:
  void Raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string out_;  // x86-64 and aarch64 are little-endian: raw copies are the encoding
};

class WireReader {
 public:
  WireReader(const char* data, size_t size) : p_(data), end_(data + size) {}
  explicit WireReader(const std::string& s) : WireReader(s.data(), s.size()) {}

  bool U8(uint8_t* v) { return Raw(v, 1); }
  bool I32(int32_t* v) { return Raw(v, sizeof(*v)); }
  bool I64(int64_t* v) { return Raw(v, sizeof(*v)); }
  bool F64(double* v) { return Raw(v, sizeof(*v)); }
  bool Str(std::string* s) {
    int64_t n;
    if (!Length(&n, 1)) return false;
    s->assign(p_, static_cast<size_t>(n));
    p_ += n;
    return true;
  }
  bool I64Vec(std::vector<int64_t>* v) { return Vec(v); }
  bool I32Vec(std::vector<int32_t>* v) { return Vec(v); }
  // A length prefix that fits in what remains, for `elem` bytes per element.
  bool Length(int64_t* n, size_t elem) {
    if (!I64(n)) return false;
    return *n >= 0 && static_cast<uint64_t>(*n) <= Remaining() / elem;
  }
  size_t Remaining() const { return static_cast<size_t>(end_ - p_); }
  bool AtEnd() const { return p_ == end_; }

 private:
  template <typename T>
  bool Vec(std::vector<T>* v) {
    int64_t n;
    if (!Length(&n, sizeof(T))) return false;
    v->resize(static_cast<size_t>(n));
    return Raw(v->data(), static_cast<size_t>(n) * sizeof(T));
  }
  bool Raw(void* out, size_t n) {
    if (Remaining() < n) return false;
    if (n) std::memcpy(out, p_, n);
    p_ += n;
    return true;
  }
  const char* p_;
  const char* end_;
};

}  // namespace hvd
