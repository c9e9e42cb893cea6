// Running the Graphviz program as a child process (posix_spawnp, pipes, poll, timeout) and
// writing pictures by extension.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "render/render.hpp"

extern char** environ;

namespace collv {

namespace fs = std::filesystem;

PictureFormat picture_format(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".svg") return PictureFormat::Svg;
  if (ext == ".png") return PictureFormat::Png;
  if (ext == ".dot" || ext == ".gv") return PictureFormat::Dot;
  throw UsageError(
      fmt::format("cannot tell the picture format of '{}': the file name must end in "
                  ".svg, .png or .dot (or .gv)",
                  path));
}

const char* picture_extension(PictureFormat f) {
  switch (f) {
    case PictureFormat::Svg:
      return "svg";
    case PictureFormat::Png:
      return "png";
    case PictureFormat::Dot:
      return "dot";
  }
  return "dot";
}

namespace {

struct Fd {
  int fd = -1;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

// Blocks SIGPIPE in this thread while a pipe to the child is written (a child that exits early
// must not kill collv), and swallows a SIGPIPE that was raised meanwhile.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &block, &old_);
  }
  ~SigpipeGuard() {
    if (!was_pending_) {
      sigset_t pending;
      sigemptyset(&pending);
      sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGPIPE);
        timespec zero{0, 0};
        sigtimedwait(&s, nullptr, &zero);
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t old_;
  bool was_pending_ = false;
};

std::string first_line(const std::string& s) {
  std::string t = s.substr(0, s.find('\n'));
  if (t.size() > 300) t = t.substr(0, 300) + "...";
  return t;
}

}  // namespace

std::string run_graphviz(const std::string& dot_text, const std::string& format,
                         const GraphvizOptions& g) {
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0) throw GraphvizError("cannot create a pipe for Graphviz");
  Fd in_r{in[0]}, in_w{in[1]};
  if (pipe2(out, O_CLOEXEC) != 0) throw GraphvizError("cannot create a pipe for Graphviz");
  Fd out_r{out[0]}, out_w{out[1]};
  if (pipe2(err, O_CLOEXEC) != 0) throw GraphvizError("cannot create a pipe for Graphviz");
  Fd err_r{err[0]}, err_w{err[1]};

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in_r.fd, 0);
  posix_spawn_file_actions_adddup2(&fa, out_w.fd, 1);
  posix_spawn_file_actions_adddup2(&fa, err_w.fd, 2);
  // The child gets default signal dispositions and an empty mask.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigemptyset(&all);
  sigaddset(&all, SIGPIPE);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::string t_arg = "-T" + format;
  std::vector<char*> argv = {const_cast<char*>(g.program.c_str()), const_cast<char*>(t_arg.c_str()),
                             nullptr};
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, g.program.c_str(), &fa, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    if (rc == ENOENT)
      throw GraphvizError(
          fmt::format("the Graphviz program '{}' was not found on PATH: install Graphviz (e.g. "
                      "`apt-get install "
                      "graphviz`), or write DOT text instead with -o FILE.dot",
                      g.program));
    throw GraphvizError(fmt::format("cannot start '{}': {}", g.program, std::strerror(rc)));
  }
  in_r.reset();
  out_w.reset();
  err_w.reset();
  fcntl(in_w.fd, F_SETFL, fcntl(in_w.fd, F_GETFL) | O_NONBLOCK);

  SigpipeGuard guard;
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<long long>(g.timeout_seconds * 1000));
  std::string result, errors;
  std::size_t written = 0;
  if (dot_text.empty()) in_w.reset();
  bool timed_out = false;
  char buf[65536];
  while (out_r.fd >= 0 || err_r.fd >= 0) {
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      timed_out = true;
      break;
    }
    int ms = static_cast<int>(std::min<long long>(
        1000, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1));
    pollfd p[3];
    int n = 0, iw = -1, io = -1, ie = -1;
    if (in_w.fd >= 0) {
      iw = n;
      p[n++] = {in_w.fd, POLLOUT, 0};
    }
    if (out_r.fd >= 0) {
      io = n;
      p[n++] = {out_r.fd, POLLIN, 0};
    }
    if (err_r.fd >= 0) {
      ie = n;
      p[n++] = {err_r.fd, POLLIN, 0};
    }
    int r = poll(p, static_cast<nfds_t>(n), ms);
    if (r < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (iw >= 0 && (p[iw].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t k = ::write(in_w.fd, dot_text.data() + written, dot_text.size() - written);
      if (k > 0) written += static_cast<std::size_t>(k);
      if ((k < 0 && errno != EAGAIN && errno != EINTR) || written == dot_text.size()) in_w.reset();
    }
    if (io >= 0 && (p[io].revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t k = ::read(out_r.fd, buf, sizeof buf);
      if (k > 0)
        result.append(buf, static_cast<std::size_t>(k));
      else if (k == 0 || (errno != EAGAIN && errno != EINTR))
        out_r.reset();
    }
    if (ie >= 0 && (p[ie].revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t k = ::read(err_r.fd, buf, sizeof buf);
      if (k > 0) {
        if (errors.size() < 8192) errors.append(buf, static_cast<std::size_t>(k));
      } else if (k == 0 || (errno != EAGAIN && errno != EINTR)) {
        err_r.reset();
      }
    }
  }
  in_w.reset();
  out_r.reset();
  err_r.reset();
  int status = 0;
  if (timed_out) {
    kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    throw GraphvizError(fmt::format(
        "Graphviz '{}' did not finish within {} s and was stopped (the picture is too large; "
        "write DOT with -o FILE.dot, or draw one step at a time)",
        g.program, g.timeout_seconds));
  }
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status))
    throw GraphvizCrash(fmt::format("Graphviz '{}' was killed by signal {}: {}", g.program,
                                    WTERMSIG(status), first_line(errors)));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
      throw GraphvizError(fmt::format("the Graphviz program '{}' could not be run", g.program));
    throw GraphvizError(fmt::format("Graphviz '{}' failed (exit {}): {}", g.program,
                                    WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                                    first_line(errors)));
  }
  if (result.empty())
    throw GraphvizError(
        fmt::format("Graphviz '{}' wrote nothing: {}", g.program, first_line(errors)));
  return result;
}

void write_picture(const std::string& dot_text, const std::string& path, const GraphvizOptions& g) {
  PictureFormat f = picture_format(path);
  std::string bytes;
  if (f == PictureFormat::Dot) {
    bytes = dot_text;
  } else {
    try {
      bytes = run_graphviz(dot_text, picture_extension(f), g);
    } catch (const GraphvizCrash&) {
      const std::string from = "splines=true", to = "splines=curved";
      auto at = dot_text.find(from);
      if (at == std::string::npos) throw;
      std::string again = dot_text;
      again.replace(at, from.size(), to);
      bytes = run_graphviz(again, picture_extension(f), g);
    }
  }
  std::ofstream os(path, std::ios::binary | std::ios::trunc);
  if (!os) throw UsageError(fmt::format("cannot write '{}'", path));
  os.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!os) throw UsageError(fmt::format("cannot write '{}'", path));
}

void write_trace_picture(const Trace& t, const std::string& path, const RenderOptions& o,
                         const GraphvizOptions& g) {
  picture_format(path);
  write_picture(
      t.failure.kind == RunFailure::Kind::Deadlock ? deadlock_dot(t, o) : schedule_dot(t, o), path,
      g);
}

void write_counterexample_picture(const Trace& t, const Counterexample& c, const std::string& path,
                                  const RenderOptions& o, const GraphvizOptions& g) {
  picture_format(path);
  write_picture(counterexample_dot(t, c, o), path, g);
}

std::vector<std::string> write_step_pictures(const Trace& t, const std::string& dir,
                                             PictureFormat f, const RenderOptions& o,
                                             const GraphvizOptions& g) {
  check_renderable(t, o);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir)) throw UsageError(fmt::format("cannot create directory '{}'", dir));
  std::vector<std::string> out;
  for (std::uint32_t s = 0; s <= t.steps; ++s) {
    std::string path =
        (fs::path(dir) / fmt::format("step-{}.{}", s, picture_extension(f))).string();
    write_picture(step_dot(t, s, o), path, g);
    out.push_back(path);
  }
  return out;
}

}  // namespace collv
