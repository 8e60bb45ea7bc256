package dev.varve.snapshot;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.DurableFiles;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;
import dev.varve.core.util.LongLongMap;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.zip.CRC32C;

/**
 * Thresher's lazy segregation target: the pre-states of one lazily ranked snapshot, copied into its new level as
 * byte-range diffs against that level's page-based pre-states (its bases), in one file
 * {@code level-<t>/extent-<snapshot>.dat}. The file is written whole and renamed into place, read-only after, and
 * deleted whole when the snapshot is dropped — so, like a Pagelog segment, it is never copied or compacted. Its
 * bases stay in their volumes while it exists: the header records, per volume level, the lowest address it pins.
 * This object is the extent's metadata; reading goes through a {@link Reader}, one per view or copy, so an archive
 * with thousands of ranked snapshots keeps no file open for them.
 *
 * <pre>
 * header (40 + 8k): magic (8) | version (4) | pageSize (4) | snapshot (8) | level (4) | k (4) | records (4)
 *                   | pins[k] (8 each; Long.MAX_VALUE = none) | crc32c of everything before (4)
 * record (24 + 8n + payload): pageId (8) | base location (8; -1 = whole page, no base) | n ranges (4)
 *                   | crc32c of the record without this field (4) | n × (offset (4) | length (4)) | payload
 * </pre>
 * A record rebuilds the page as its base image with the ranges overwritten (a whole page is one range over no base).
 * Every byte that decides what is read is checked before use: the header by its CRC, and each record — page id,
 * base, ranges and payload — by its own whenever the records are walked ({@link Reader#forEachRecord}, which also
 * checks that they fill the file and number what the header says) or one is read. A damaged record is a
 * {@link CorruptionException}, never a page left out of a view's index, which would let the read fall through to
 * another version's pre-state.
 */
final class RankedExtent {
    static final long MAGIC = 0x5641525645455831L; // "VARVEEX1"
    static final int VERSION = 1;
    static final int RECORD_HEADER = 24;
    /** A gap shorter than a range header is cheaper to copy than to split the range at. */
    private static final int MIN_GAP = 8;
    private static final String PREFIX = "extent-";
    private static final String SUFFIX = ".dat";

    private final Path path;
    private final long snapshot;
    private final int level;
    private final int pageSize;
    private final long[] pins;
    private final long bytes;
    private final int headerBytes;
    private final int records;

    private RankedExtent(Path path, long snapshot, int level, int pageSize, long[] pins, long bytes, int records) {
        this.path = path;
        this.snapshot = snapshot;
        this.level = level;
        this.pageSize = pageSize;
        this.pins = pins;
        this.bytes = bytes;
        this.headerBytes = headerBytes(pins.length);
        this.records = records;
    }

    private static int headerBytes(int k) {
        return 36 + 8 * k + 4;
    }

    static Path pathOf(Path levelDir, long snapshot) {
        return levelDir.resolve(PREFIX + snapshot + SUFFIX);
    }

    /** The snapshot id of an extent file's name, or -1 for any other file. */
    static long snapshotOf(Path file) {
        String n = file.getFileName().toString();
        if (!n.startsWith(PREFIX) || !n.endsWith(SUFFIX)) return -1;
        try {
            return Long.parseLong(n.substring(PREFIX.length(), n.length() - SUFFIX.length()));
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    long snapshot() {
        return snapshot;
    }

    int level() {
        return level;
    }

    Path path() {
        return path;
    }

    long bytes() {
        return bytes;
    }

    /** The lowest address of volume {@code volumeLevel} a record's base lies at, Long.MAX_VALUE when none. */
    long pin(int volumeLevel) {
        return volumeLevel <= pins.length ? pins[volumeLevel - 1] : Long.MAX_VALUE;
    }

    /** Reads the metadata of an extent written earlier, checking its header. */
    static RankedExtent open(FileIOFactory io, Path path, int pageSize) {
        try (FileIO f = io.open(path, false)) {
            ByteBuffer h = ByteBuffer.allocate(36).order(ByteOrder.LITTLE_ENDIAN);
            if (f.read(h, 0) < 36 || h.getLong(0) != MAGIC) throw new CorruptionException("ranked extent header is corrupt", path, 0);
            if (h.getInt(8) != VERSION) throw new CorruptionException("unsupported ranked extent version " + h.getInt(8), path, 8);
            if (h.getInt(12) != pageSize) throw new CorruptionException("ranked extent written with page size " + h.getInt(12), path, 12);
            int k = h.getInt(28);
            if (k < 1 || k > 64) throw new CorruptionException("ranked extent header names " + k + " levels", path, 28);
            ByteBuffer full = ByteBuffer.allocate(headerBytes(k)).order(ByteOrder.LITTLE_ENDIAN);
            if (f.read(full, 0) < full.capacity()) throw new CorruptionException("ranked extent header truncated", path, 0);
            if (full.getInt(full.capacity() - 4) != crc(full, 0, full.capacity() - 4)) throw new CorruptionException("ranked extent header checksum mismatch", path, 0);
            long[] pins = new long[k];
            for (int j = 0; j < k; j++) pins[j] = full.getLong(36 + 8 * j);
            return new RankedExtent(path, full.getLong(16), full.getInt(24), pageSize, pins, f.size(), full.getInt(32));
        } catch (IOException e) {
            throw new StorageException("cannot open a ranked extent: " + e.getMessage(), path, e);
        }
    }

    /**
     * Recovery: checks that this is snapshot {@code id}'s extent at {@code expectedLevel} and that every record is
     * whole and intact; a {@link CorruptionException} naming the file otherwise.
     */
    void verify(FileIOFactory io, long id, int expectedLevel) {
        if (snapshot != id || level != expectedLevel)
            throw new CorruptionException("ranked extent holds snapshot " + snapshot + " at level " + level + ", expected snapshot " + id + " at level "
                    + expectedLevel, path, 16);
        try (Reader r = reader(io)) {
            r.forEachRecord((pageId, offset, base) -> { });
        }
    }

    /** Opens the extent file for reading; close the reader when done. */
    Reader reader(FileIOFactory io) {
        try {
            return new Reader(io.open(path, false));
        } catch (IOException e) {
            throw new StorageException("cannot open a ranked extent: " + e.getMessage(), path, e);
        }
    }

    void delete(FileIOFactory io) {
        try {
            io.delete(path);
        } catch (IOException e) {
            throw new StorageException("cannot delete a ranked extent: " + e.getMessage(), path, e);
        }
    }

    interface RecordVisitor {
        void visit(long pageId, long offset, long base);
    }

    interface BaseReader {
        void read(long location, long pageId, ByteBuffer dst, int dstOffset);
    }

    /** An open extent file: its records, read without locks (the file never changes once in place). */
    final class Reader implements AutoCloseable {
        private final FileIO file;

        private Reader(FileIO file) {
            this.file = file;
        }

        RankedExtent extent() {
            return RankedExtent.this;
        }

        /** Page id → location ({@link ArchiveLevel#extentLocation}) of every record, read from the file. */
        void index(LongLongMap into) {
            forEachRecord((pageId, offset, base) -> into.putIfAbsent(pageId, ArchiveLevel.extentLocation(offset)));
        }

        /**
         * Calls {@code visitor} with every record's page, file offset and base location, each record checked whole
         * (CRC, ranges) before it is used; the records must fill the file and number what the header says.
         */
        void forEachRecord(RecordVisitor visitor) {
            Window w = new Window(file);
            long at = headerBytes;
            int count = 0;
            try {
                while (at < bytes) {
                    ByteBuffer b = w.buffer();
                    int h = w.at(at, RECORD_HEADER);
                    int n = b.getInt(h + 16);
                    if (n < 0 || 8L * n > pageSize + 8) throw new CorruptionException("ranked extent record names " + n + " ranges", path, at);
                    int r = w.at(at, RECORD_HEADER + 8 * n);
                    long payload = 0;
                    for (int i = 0; i < n; i++) {
                        int off = b.getInt(r + RECORD_HEADER + 8 * i);
                        int len = b.getInt(r + RECORD_HEADER + 8 * i + 4);
                        if (off < 0 || len < 0 || (long) off + len > pageSize) throw new CorruptionException("ranked extent range outside the page", path, at);
                        payload += len;
                    }
                    if (8L * n + payload > pageSize + 8) throw new CorruptionException("ranked extent record larger than a page", path, at);
                    int size = RECORD_HEADER + 8 * n + (int) payload;
                    int o = w.at(at, size);
                    CRC32C c = new CRC32C();
                    c.update(b.array(), o, 20);
                    c.update(b.array(), o + RECORD_HEADER, size - RECORD_HEADER);
                    if ((int) c.getValue() != b.getInt(o + 20)) throw new CorruptionException("ranked extent record checksum mismatch", path, at);
                    visitor.visit(b.getLong(o), at, b.getLong(o + 8));
                    at += size;
                    count++;
                }
            } catch (IOException e) {
                throw new StorageException("cannot read a ranked extent: " + e.getMessage(), path, e);
            }
            if (count != records) throw new CorruptionException("ranked extent holds " + count + " records but its header says " + records, path, at);
        }

        /**
         * Rebuilds the image of {@code pageId} from the record at {@code offset}: its base (read through {@code bases})
         * with its ranges applied; checks the record's CRC and page id. One read per record.
         */
        void read(long offset, long pageId, ByteBuffer dst, int dstOffset, BaseReader bases) {
            int max = (int) Math.min(bytes - offset, RECORD_HEADER + 8 + pageSize); // no record is larger
            if (offset < headerBytes || max < RECORD_HEADER) throw new CorruptionException("no ranked extent record at this offset", path, offset);
            ByteBuffer rec = ByteBuffer.allocate(max).order(ByteOrder.LITTLE_ENDIAN);
            try {
                if (file.read(rec, offset) < max) throw new CorruptionException("ranked extent record truncated", path, offset);
            } catch (IOException e) {
                throw new StorageException("cannot read a ranked extent: " + e.getMessage(), path, e);
            }
            int n = rec.getInt(16);
            if (rec.getLong(0) != pageId || n < 0 || RECORD_HEADER + 8L * n > max)
                throw new CorruptionException("ranked extent record at this offset is not page " + pageId + "'s", path, offset);
            int from = RECORD_HEADER + 8 * n;
            int size = from;
            for (int i = 0; i < n; i++) {
                int off = rec.getInt(RECORD_HEADER + 8 * i);
                int len = rec.getInt(RECORD_HEADER + 8 * i + 4);
                if (off < 0 || len < 0 || off + len > pageSize || size + len > max) throw new CorruptionException("ranked extent range outside the page", path, offset);
                size += len;
            }
            CRC32C c = new CRC32C();
            c.update(rec.array(), 0, 20);
            c.update(rec.array(), RECORD_HEADER, size - RECORD_HEADER);
            if ((int) c.getValue() != rec.getInt(20)) throw new CorruptionException("ranked extent record checksum mismatch (page " + pageId + ")", path, offset);
            long base = rec.getLong(8);
            if (base >= 0) bases.read(base, pageId, dst, dstOffset);
            for (int i = 0; i < n; i++) {
                int len = rec.getInt(RECORD_HEADER + 8 * i + 4);
                dst.put(dstOffset + rec.getInt(RECORD_HEADER + 8 * i), rec, from, len);
                from += len;
            }
        }

        @Override
        public void close() {
            try {
                file.close();
            } catch (IOException e) {
                throw new StorageException("cannot close a ranked extent", path, e);
            }
        }
    }

    /** A sequential read window over an extent file, so a walk reads it in large pieces. */
    private final class Window {
        private final FileIO file;
        private final ByteBuffer buf = ByteBuffer.allocate(Math.max(1 << 20, 2 * (RECORD_HEADER + 8 + pageSize))).order(ByteOrder.LITTLE_ENDIAN);
        private long start;
        private int length;

        Window(FileIO file) {
            this.file = file;
        }

        ByteBuffer buffer() {
            return buf;
        }

        /** The position in {@link #buffer} of file bytes [at, at + n), read in when not there yet. */
        int at(long at, int n) throws IOException {
            if (at < start || at + n > start + length) {
                int want = (int) Math.min(buf.capacity(), bytes - at);
                if (want < n) throw new CorruptionException("ranked extent record runs past the end of the file", path, at);
                buf.clear().limit(want);
                int got = file.read(buf, at);
                if (got < n) throw new CorruptionException("ranked extent record truncated", path, at);
                start = at;
                length = got;
            }
            return (int) (at - start);
        }
    }

    private static int crc(ByteBuffer b, int from, int to) {
        CRC32C c = new CRC32C();
        ByteBuffer d = b.duplicate();
        d.limit(to).position(from);
        c.update(d);
        return (int) c.getValue();
    }

    /**
     * Writes one extent: records are staged and appended to a temp file, which is fsynced with its header and
     * renamed into place ({@link DurableFiles}), so a crash leaves either the whole extent or a temp file.
     */
    static final class Writer {
        private final FileIOFactory io;
        private final Path path;
        private final Path tmp;
        private final FileIO file;
        private final long snapshot;
        private final int level;
        private final int pageSize;
        private final long[] pins;
        private final ByteBuffer stage;
        private final int[] ranges;
        private long at;
        private int records;
        private long diffBytes;
        private long wholePages;

        Writer(FileIOFactory io, Path levelDir, long snapshot, int level, int levels, int pageSize) {
            this.io = io;
            this.path = pathOf(levelDir, snapshot);
            this.tmp = path.resolveSibling(path.getFileName() + ".creating");
            this.snapshot = snapshot;
            this.level = level;
            this.pageSize = pageSize;
            this.pins = new long[levels];
            Arrays.fill(pins, Long.MAX_VALUE);
            this.stage = ByteBuffer.allocate(Math.max(1 << 20, 2 * (RECORD_HEADER + 8 + pageSize))).order(ByteOrder.LITTLE_ENDIAN);
            this.ranges = new int[pageSize + 2];
            this.at = headerBytes(levels);
            try {
                this.file = io.open(tmp, true);
                file.truncate(0);
            } catch (IOException e) {
                throw new StorageException("cannot create a ranked extent: " + e.getMessage(), tmp, e);
            }
            if (!DurableFiles.isTemp(tmp)) throw new IllegalStateException(tmp + " is not recognised as a temp file");
        }

        /**
         * Adds the image of {@code pageId} ({@code image}), as the byte ranges where it differs from {@code baseImage}
         * at {@code base} in volume {@code baseVolume} — or whole when there is no base ({@code base} &lt; 0) or the
         * diff would not be much smaller.
         */
        void add(long pageId, ByteBuffer image, ByteBuffer baseImage, long base, int baseVolume) {
            int n = base < 0 ? -1 : diff(image, baseImage);
            int payload = 0;
            for (int i = 0; i < n; i++) payload += ranges[2 * i + 1];
            if (n < 0 || payload + 8 * n > pageSize * 3 / 4) {
                n = 1;
                ranges[0] = 0;
                ranges[1] = pageSize;
                payload = pageSize;
                base = -1;
                wholePages++;
            } else {
                pins[baseVolume - 1] = Math.min(pins[baseVolume - 1], ArchiveLevel.addressOf(base));
            }
            int size = RECORD_HEADER + 8 * n + payload;
            if (stage.remaining() < size) writeStage();
            int start = stage.position();
            stage.putLong(pageId).putLong(base).putInt(n).putInt(0);
            for (int i = 0; i < n; i++) stage.putInt(ranges[2 * i]).putInt(ranges[2 * i + 1]);
            for (int i = 0; i < n; i++) stage.put(stage.position(), image, ranges[2 * i], ranges[2 * i + 1]).position(stage.position() + ranges[2 * i + 1]);
            CRC32C c = new CRC32C();
            c.update(stage.array(), start, 20);
            c.update(stage.array(), start + RECORD_HEADER, size - RECORD_HEADER);
            stage.putInt(start + 20, (int) c.getValue());
            records++;
            diffBytes += size - RECORD_HEADER;
        }

        /** Fills {@link #ranges} with the (offset, length) runs where the two images differ; returns their count. */
        private int diff(ByteBuffer image, ByteBuffer baseImage) {
            int n = 0;
            int i = 0;
            while (i < pageSize) {
                int m = image.slice(i, pageSize - i).mismatch(baseImage.slice(i, pageSize - i));
                if (m < 0) break;
                int start = i + m;
                int last = start;
                for (int j = start + 1; j < pageSize && j - last <= MIN_GAP; j++) if (image.get(j) != baseImage.get(j)) last = j;
                ranges[2 * n] = start;
                ranges[2 * n + 1] = last + 1 - start;
                n++;
                i = last + 1;
            }
            return n;
        }

        /** Bytes of diffs (ranges and payload) staged so far: the numerator of R. */
        long diffBytes() {
            return diffBytes;
        }

        int records() {
            return records;
        }

        long wholePages() {
            return wholePages;
        }

        private void writeStage() {
            stage.flip();
            try {
                while (stage.hasRemaining()) {
                    int before = stage.position();
                    file.write(stage, at);
                    at += stage.position() - before;
                }
            } catch (IOException e) {
                throw new StorageException("cannot write a ranked extent: " + e.getMessage(), tmp, e);
            }
            stage.clear();
        }

        /** Writes the header, fsyncs and renames the extent into place; returns it opened. */
        RankedExtent finish() {
            writeStage();
            ByteBuffer h = ByteBuffer.allocate(headerBytes(pins.length)).order(ByteOrder.LITTLE_ENDIAN);
            h.putLong(MAGIC).putInt(VERSION).putInt(pageSize).putLong(snapshot).putInt(level).putInt(pins.length).putInt(records);
            for (long p : pins) h.putLong(p);
            h.putInt(crc(h, 0, h.capacity() - 4));
            h.flip();
            try {
                file.write(h, 0);
                file.force();
                file.close();
                io.atomicMove(tmp, path);
            } catch (IOException e) {
                throw new StorageException("cannot complete a ranked extent: " + e.getMessage(), tmp, e);
            }
            return open(io, path, pageSize);
        }

        /** Discards a half-written extent (the copy failed). */
        void abandon() {
            try {
                file.close();
                io.delete(tmp);
            } catch (IOException e) {
                throw new StorageException("cannot discard a ranked extent: " + e.getMessage(), tmp, e);
            }
        }
    }
}
