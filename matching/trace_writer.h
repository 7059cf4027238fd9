// The file side of recording a matching trace (trace_record.cc): the recorder
// appends records in place, into one of two chunks; a full chunk goes to the
// file while the recorder fills the other.
//
// Direct I/O: the chunk is written with O_DIRECT by Linux AIO, so the kernel
// neither copies it into the page cache nor later writes the page cache back.
// O_DIRECT wants 4 KiB-aligned offsets and lengths, so a chunk's last partial
// 4 KiB go at the head of the next one; the space ahead is allocated in
// advance (an extending direct write is synchronous), the file cut to its
// length at the end. Buffered: the same chunks, write(2) each.
//
// Automatic (the default): buffered while the page cache takes the chunks at
// memory speed, direct from the chunk after the one where it stops (the copy
// itself slow, or the kernel holding the writer back for its write-back). Which
// costs a run less depends on the machine and on how much the run writes: on
// one VM direct I/O cost two thirds of what the page cache's slow copy did at
// depth 0, on another the page cache took the whole trace at 0.3 ns a byte and
// direct I/O cost twice as much as it (docs/traces.md, "Direct, buffered or
// automatic"). Only the buffered writes' time can be seen from here (a
// direct write's cost lands on the disk and the host), so the choice is one
// way.
//
// A write that fails is tried again buffered; failing again, the file ends
// at the last whole record before it and every event from there on is
// counted as lost (never silent: the end record says how many).
#ifndef UBERMATCH_MATCHING_TRACE_WRITER_H
#define UBERMATCH_MATCHING_TRACE_WRITER_H

#include <cstddef>
#include <cstdint>
#include <string>

#include <linux/aio_abi.h>
#include <sys/types.h>

#include "matching/trace.h"

namespace ubermatch {
namespace trace {

// automatic: the page cache is slow when the median of its last kJudged
// chunks' writes took more than this per byte: slower than 1 GB/s, where a
// copy into the page cache runs at 0.3-0.5 ns a byte on the project's VM at
// either of its speeds, and the kernel's throttling for its write-back holds
// a writer for milliseconds (10 ns a byte and more). A VM whose copy took 39%
// of a recording rank's time ran at ~1 ns a byte (docs/traces.md).
constexpr double kSlowPageCacheNsPerByte = 1.0;
constexpr int kJudged = 8;

// A chunk: buffered, small, so that both chunks stay in the core's L2 while
// the recorder fills one and write(2) copies the other out (docs/traces.md,
// "Smaller chunks through the page cache"); direct, large, as each io_submit
// pins its pages at a cost per call.
constexpr size_t kBufferedChunk = size_t{128} << 10;
constexpr size_t kDirectChunk = size_t{512} << 10;

class TraceWriter {
public:
    // Creates path, `header` (header_size bytes, a multiple of 8) first in
    // it, written as `mode` says; slow_ns_per_byte: automatic's bound (tests
    // set 0 to switch at once). ok() says whether the file was made (else
    // every event committed counts as lost); a file another writer still holds
    // open is left alone (error() EBUSY).
    TraceWriter(const std::string &path, const void *header, size_t header_size, WriteMode mode,
                double slow_ns_per_byte = kSlowPageCacheNsPerByte);
    ~TraceWriter();
    TraceWriter(const TraceWriter &) = delete;
    TraceWriter &operator=(const TraceWriter &) = delete;

    bool ok() const { return fd_ >= 0; }
    // errno of the file's creation (!ok()), or of finish()'s failed end.
    int error() const { return error_; }
    bool direct() const { return ctx_ != 0; }
    // automatic: the file offset from which it wrote with direct I/O (-1:
    // buffered throughout), and the median ns a byte of its last judged
    // buffered writes (0 before kJudged of them).
    off_t direct_from() const { return direct_from_; }
    double page_cache_ns_per_byte() const { return judged_; }

    // Where the next record goes, and how many fit there.
    PackedRecord *area() const { return area_; }
    size_t room() const { return room_; }

    // The first n records at area() go to the file; area() and room() then
    // name the next chunk.
    void commit(size_t n);
    // As commit, and the last partial 4 KiB too (written again when their
    // chunk goes), and `header` over the file's first bytes: the file then
    // holds every record so far, for a job that is killed while idle.
    void sync(size_t n, const void *header);
    // The first n records at area(), then `end` with end.b += lost(), go to the
    // file and `header` over its first bytes; the file is closed. Returns
    // whether the end record and the header were written.
    bool finish(size_t n, PackedRecord end, const void *header);
    // The events that did not reach the file (final after finish()).
    uint64_t lost() const { return lost_; }

private:
    struct Chunk {
        char *mem = nullptr;
        off_t off = 0;         // its bytes' place in the file
        size_t len = 0;         // bytes to write (0: nothing to reap)
        unsigned straddler = 0; // events of a unit that begins in the chunk before and ends in this one
        bool in_flight = false; // submitted, not yet reaped
        long result = 0;        // bytes written, or -errno (direct: set when reaped)
        iocb cb{};
    };

    // Writes c (direct and in flight where may_direct and direct(), else at once).
    void write_chunk(Chunk &c, bool may_direct);
    void reap(Chunk &c); // waits for c's write, retries it, counts its events when lost
    uint64_t events_ending_in(const Chunk &c) const;
    // Bytes from the start of the record that file offset off (>= the header's
    // size) falls in: records are 16 bytes from the header on.
    off_t into_record(off_t off) const {
        return (off - static_cast<off_t>(header_size_)) % static_cast<off_t>(sizeof(PackedRecord));
    }
    bool write_plain(const void *p, size_t n, off_t off) const;
    // Records that fit a chunk holding `used` bytes: its write's size follows the way it is written.
    size_t room_after(size_t used) const;
    // Direct I/O from `from` on (the space ahead allocated); false, nothing
    // changed, where the file system or the kernel refuses it.
    bool open_direct(off_t from);
    // automatic: one buffered write of `bytes` took `ns`; switches to direct
    // from `end` when the page cache has become slow.
    void judge(size_t bytes, uint64_t ns, off_t end);
    void close_files(); // waits for the writes in flight first: their memory may go next

    const std::string path_;
    const size_t header_size_;
    int fd_ = -1;       // the file (O_DIRECT where direct())
    int plain_fd_ = -1; // the same file, buffered: retries, the last bytes, the header
    int error_ = 0;
    aio_context_t ctx_ = 0;
    Chunk chunks_[2];
    int cur_ = 0;
    size_t used_ = 0;     // bytes of chunks_[cur_] in use (carried bytes and records)
    off_t allocated_ = 0; // the file's space allocated so far (direct)
    PackedRecord *area_ = nullptr;
    size_t room_ = 0;
    bool failed_ = false;
    off_t good_end_ = 0; // failed_: the file ends here (a record boundary)
    uint64_t lost_ = 0;
    bool judging_ = false; // automatic, still buffered
    const double slow_ns_per_byte_;
    double recent_[kJudged] = {}; // ns a byte of the last buffered writes, a ring
    uint64_t writes_judged_ = 0;
    double judged_ = 0;
    off_t direct_from_ = -1;
};

} // namespace trace
} // namespace ubermatch

#endif
