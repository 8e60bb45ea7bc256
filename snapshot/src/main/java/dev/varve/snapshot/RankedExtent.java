package dev.varve.snapshot;

import dev.varve.core.io.Closeables;
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

/**
 * Thresher's lazy segregation target: the pre-states of one lazily ranked snapshot, copied into its new level as
 * byte-range diffs against that level's page-based pre-states (its bases), in one file
 * {@code level-<t>/extent-<snapshot>.dat}. The file is written whole and renamed into place, read-only after, and
 * deleted whole when the snapshot is dropped — so, like a Pagelog segment, it is never copied or compacted. Its
 * bases stay in their volumes while it exists: the header records, per volume level, the lowest address it pins.
 * This object is the extent's metadata; reading goes through a {@link Reader}, one per view or copy, so an archive
 * with thousands of ranked snapshots keeps no file open for them.
 *
 * <p>The layout is {@link RankedExtentDescriptor}'s. A record rebuilds the page as its base image with the ranges
 * overwritten ({@link PageDiff}; a whole page is one range over no base).
 * Every byte that decides what is read is checked before use: the header by its CRC, and each record — page id,
 * base, ranges and payload — by its own whenever the records are walked ({@link Reader#forEachRecord}, which also
 * checks that they fill the file and number what the header says) or one is read. A damaged record is a
 * {@link CorruptionException}, never a page left out of a view's index, which would let the read fall through to
 * another version's pre-state.
 */
final class RankedExtent {
    private static final int RECORD_HEADER = RankedExtentDescriptor.RECORD_HEADER_SIZE;
    private static final int RANGE = RankedExtentDescriptor.RANGE_SIZE;

    private final Path path;
    private final long snapshot;
    private final int level;
    private final int pageSize;
    private final long[] pins;
    private final long bytes;
    private final int headerBytes;
    private final int records;

    private RankedExtent(Path path, int version, long snapshot, int level, int pageSize, long[] pins, long bytes, int records) {
        this.path = path;
        this.snapshot = snapshot;
        this.level = level;
        this.pageSize = pageSize;
        this.pins = pins;
        this.bytes = bytes;
        this.headerBytes = RankedExtentDescriptor.headerSize(version, pins.length);
        this.records = records;
    }

    static Path pathOf(Path levelDir, long snapshot) {
        return levelDir.resolve(RankedExtentDescriptor.fileName(snapshot));
    }

    /** The snapshot id of an extent file's name, or -1 for any other file. */
    static long snapshotOf(Path file) {
        return RankedExtentDescriptor.snapshotOf(file.getFileName().toString());
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
        return volumeLevel <= pins.length ? pins[volumeLevel - 1] : RankedExtentDescriptor.NO_PIN;
    }

    /** Reads the metadata of an extent written earlier, checking its header; of no store in particular. */
    static RankedExtent open(FileIOFactory io, Path path, int pageSize) {
        return open(io, path, pageSize, 0);
    }

    /**
     * Reads the metadata of an extent written earlier, checking its header: one of another store than the one whose
     * durable id is {@code storeId} (0: none yet, no check) is refused.
     */
    static RankedExtent open(FileIOFactory io, Path path, int pageSize, long storeId) {
        try (FileIO f = io.open(path, false)) {
            ByteBuffer h = ByteBuffer.allocate(RankedExtentDescriptor.FIXED_HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
            if (f.read(h, 0) < h.capacity()) throw new CorruptionException("ranked extent header truncated", path, 0);
            int k = RankedExtentDescriptor.checkFixedHeader(h, path, pageSize);
            int version = h.getInt(RankedExtentDescriptor.VERSION_OFFSET);
            int size = RankedExtentDescriptor.headerSize(version, k);
            ByteBuffer full = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
            if (f.read(full, 0) < size) throw new CorruptionException("ranked extent header truncated", path, 0);
            if (full.getInt(RankedExtentDescriptor.headerCrcOffset(version, k)) != RankedExtentDescriptor.headerCrc(full, version, k))
                throw new CorruptionException("ranked extent header checksum mismatch", path, 0);
            String foreign = RankedExtentDescriptor.foreign(full, version, k, storeId);
            if (foreign != null) throw new CorruptionException(foreign, path, RankedExtentDescriptor.storeTagOffset(k));
            long[] pins = new long[k];
            for (int j = 1; j <= k; j++) pins[j - 1] = full.getLong(RankedExtentDescriptor.pinOffset(j));
            return new RankedExtent(path, version, full.getLong(RankedExtentDescriptor.SNAPSHOT_OFFSET), full.getInt(RankedExtentDescriptor.LEVEL_OFFSET),
                    pageSize, pins, f.size(), full.getInt(RankedExtentDescriptor.RECORDS_OFFSET));
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
                    + expectedLevel, path, RankedExtentDescriptor.SNAPSHOT_OFFSET);
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

        /** Page id → location ({@link ArchiveEncoding#extentLocation}) of every record, read from the file. */
        void index(LongLongMap into) {
            forEachRecord((pageId, offset, base) -> into.putIfAbsent(pageId, ArchiveEncoding.extentLocation(offset)));
        }

        /**
         * Calls {@code visitor} with every record's page, file offset and base location, each record checked whole
         * (CRC, ranges) before it is used; the records must fill the file and number what the header says.
         */
        void forEachRecord(RecordVisitor visitor) {
            Window w = new Window(file);
            int[] ranges = PageDiff.rangesFor(pageSize);
            long at = headerBytes;
            int count = 0;
            try {
                while (at < bytes) {
                    ByteBuffer b = w.buffer();
                    int h = w.at(at, RECORD_HEADER);
                    int n = b.getInt(h + RankedExtentDescriptor.RANGE_COUNT_OFFSET);
                    if (n < 0 || (long) RANGE * n > pageSize + RANGE) throw new CorruptionException("ranked extent record names " + n + " ranges", path, at);
                    int r = w.at(at, RECORD_HEADER + RANGE * n);
                    long payload = readRanges(b, r, n, ranges, at);
                    if ((long) RANGE * n + payload > pageSize + RANGE) throw new CorruptionException("ranked extent record larger than a page", path, at);
                    int size = RECORD_HEADER + RANGE * n + (int) payload;
                    int o = w.at(at, size);
                    if (RankedExtentDescriptor.recordCrc(b, o, size) != b.getInt(o + RankedExtentDescriptor.RECORD_CRC_OFFSET))
                        throw new CorruptionException("ranked extent record checksum mismatch", path, at);
                    visitor.visit(b.getLong(o + RankedExtentDescriptor.PAGE_ID_OFFSET), at, b.getLong(o + RankedExtentDescriptor.BASE_OFFSET));
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
            int max = (int) Math.min(bytes - offset, RankedExtentDescriptor.maxRecordBytes(pageSize));
            if (offset < headerBytes || max < RECORD_HEADER) throw new CorruptionException("no ranked extent record at this offset", path, offset);
            ByteBuffer rec = ByteBuffer.allocate(max).order(ByteOrder.LITTLE_ENDIAN);
            try {
                if (file.read(rec, offset) < max) throw new CorruptionException("ranked extent record truncated", path, offset);
            } catch (IOException e) {
                throw new StorageException("cannot read a ranked extent: " + e.getMessage(), path, e);
            }
            int n = rec.getInt(RankedExtentDescriptor.RANGE_COUNT_OFFSET);
            if (rec.getLong(RankedExtentDescriptor.PAGE_ID_OFFSET) != pageId || n < 0 || RECORD_HEADER + (long) RANGE * n > max)
                throw new CorruptionException("ranked extent record at this offset is not page " + pageId + "'s", path, offset);
            int[] ranges = new int[2 * n];
            int from = RECORD_HEADER + RANGE * n;
            long size = from + readRanges(rec, 0, n, ranges, offset);
            if (size > max) throw new CorruptionException("ranked extent range outside the page", path, offset);
            if (RankedExtentDescriptor.recordCrc(rec, 0, (int) size) != rec.getInt(RankedExtentDescriptor.RECORD_CRC_OFFSET))
                throw new CorruptionException("ranked extent record checksum mismatch (page " + pageId + ")", path, offset);
            long base = rec.getLong(RankedExtentDescriptor.BASE_OFFSET);
            if (base >= 0) bases.read(base, pageId, dst, dstOffset);
            PageDiff.apply(dst, dstOffset, ranges, n, rec, from);
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
        private final ByteBuffer buf = ByteBuffer.allocate(Math.max(1 << 20, 2 * RankedExtentDescriptor.maxRecordBytes(pageSize))).order(ByteOrder.LITTLE_ENDIAN);
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

    /**
     * Reads the {@code n} ranges of the record at {@code at} of {@code b} (file offset {@code fileOffset}) into
     * {@code ranges}, each checked to lie in the page; returns their payload bytes.
     */
    private long readRanges(ByteBuffer b, int at, int n, int[] ranges, long fileOffset) {
        long payload = 0;
        for (int i = 0; i < n; i++) {
            int field = at + RankedExtentDescriptor.rangeOffset(i);
            int off = b.getInt(field);
            int len = b.getInt(field + RankedExtentDescriptor.RANGE_LENGTH_OFFSET);
            if (off < 0 || len < 0 || (long) off + len > pageSize) throw new CorruptionException("ranked extent range outside the page", path, fileOffset);
            ranges[2 * i] = off;
            ranges[2 * i + 1] = len;
            payload += len;
        }
        return payload;
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
        /** The store's durable id when the writer started (0: none yet): what the header records. */
        private final long storeId;
        private final ByteBuffer stage;
        private final int[] ranges;
        private long at;
        private int records;
        private long diffBytes;
        private long wholePages;

        /** A writer of an extent that names no store (tests of the extent alone). */
        Writer(FileIOFactory io, Path levelDir, long snapshot, int level, int levels, int pageSize) {
            this(io, levelDir, snapshot, level, levels, pageSize, 0);
        }

        /** A writer of an extent of the store whose durable id is {@code storeId} (0: none yet), which it records. */
        Writer(FileIOFactory io, Path levelDir, long snapshot, int level, int levels, int pageSize, long storeId) {
            this.io = io;
            this.storeId = storeId;
            this.path = pathOf(levelDir, snapshot);
            this.tmp = path.resolveSibling(path.getFileName() + RankedExtentDescriptor.TEMP_SUFFIX);
            this.snapshot = snapshot;
            this.level = level;
            this.pageSize = pageSize;
            this.pins = new long[levels];
            Arrays.fill(pins, RankedExtentDescriptor.NO_PIN);
            this.stage = ByteBuffer.allocate(Math.max(1 << 20, 2 * RankedExtentDescriptor.maxRecordBytes(pageSize))).order(ByteOrder.LITTLE_ENDIAN);
            this.ranges = PageDiff.rangesFor(pageSize);
            this.at = RankedExtentDescriptor.headerSize(levels);
            FileIO opened = null;
            try {
                opened = io.open(tmp, true);
                opened.truncate(0);
            } catch (IOException e) {
                // the caller abandons only a constructed writer: a file opened here and refused is closed here, or it
                // stays open (on a temp file the next open deletes) for as long as the process runs
                Closeables.closeAfter(e, opened);
                throw new StorageException("cannot create a ranked extent: " + e.getMessage(), tmp, e);
            }
            this.file = opened;
            if (!DurableFiles.isTemp(tmp)) throw new IllegalStateException(tmp + " is not recognised as a temp file");
        }

        /**
         * Adds the image of {@code pageId} ({@code image}), as the byte ranges where it differs from {@code baseImage}
         * at {@code base} in volume {@code baseVolume}, whose record {@code pin} (the whole page the base is rebuilt
         * from) must stay while this extent does — or whole when there is no base ({@code base} &lt; 0) or the diff
         * would not be much smaller.
         */
        void add(long pageId, ByteBuffer image, ByteBuffer baseImage, long base, int baseVolume, long pin) {
            int n = base < 0 ? -1 : PageDiff.diff(baseImage, image, pageSize, ranges);
            int payload = n < 0 ? 0 : PageDiff.payloadBytes(ranges, n);
            if (n < 0 || payload + RANGE * n > pageSize * 3 / 4) {
                n = 1;
                ranges[0] = 0;
                ranges[1] = pageSize;
                payload = pageSize;
                base = RankedExtentDescriptor.NO_BASE;
                wholePages++;
            } else {
                pins[baseVolume - 1] = Math.min(pins[baseVolume - 1], pin);
            }
            int size = RECORD_HEADER + RANGE * n + payload;
            if (stage.remaining() < size) writeStage();
            int start = stage.position();
            stage.putLong(start + RankedExtentDescriptor.PAGE_ID_OFFSET, pageId).putLong(start + RankedExtentDescriptor.BASE_OFFSET, base)
                    .putInt(start + RankedExtentDescriptor.RANGE_COUNT_OFFSET, n).putInt(start + RankedExtentDescriptor.RECORD_CRC_OFFSET, 0);
            for (int i = 0; i < n; i++) {
                int field = start + RankedExtentDescriptor.rangeOffset(i);
                stage.putInt(field, ranges[2 * i]).putInt(field + RankedExtentDescriptor.RANGE_LENGTH_OFFSET, ranges[2 * i + 1]);
            }
            stage.position(PageDiff.putPayload(image, 0, ranges, n, stage, start + RECORD_HEADER + RANGE * n));
            stage.putInt(start + RankedExtentDescriptor.RECORD_CRC_OFFSET, RankedExtentDescriptor.recordCrc(stage, start, size));
            records++;
            // a whole page counts as the page, not with its range field: R is 1.0 when every page went whole, as
            // VarveMetrics.diffCompactness says, where the range made it 1.002 at 4 KiB pages (1.008 at 1 KiB)
            diffBytes += base == RankedExtentDescriptor.NO_BASE ? pageSize : size - RECORD_HEADER;
        }

        /** Bytes of diffs (ranges and payload; a whole page's bytes for a page stored whole) staged so far: the numerator of R. */
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
            ByteBuffer h = RankedExtentDescriptor.header(pageSize, snapshot, level, records, pins, storeId);
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
