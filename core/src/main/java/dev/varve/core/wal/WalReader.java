package dev.varve.core.wal;

import static dev.varve.core.wal.WalSegmentDescriptor.HEADER_SIZE;
import static dev.varve.core.wal.WalSegmentDescriptor.LSN_OFFSET;
import static dev.varve.core.wal.WalSegmentDescriptor.PAYLOAD_OFFSET;
import static dev.varve.core.wal.WalSegmentDescriptor.RECORD_HEADER_SIZE;
import static dev.varve.core.wal.WalSegmentDescriptor.TYPE_OFFSET;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.NoSuchElementException;
import java.util.zip.CRC32C;

/**
 * Iterates WAL records in LSN order from a start LSN to an end fixed when the reader was made (see
 * {@link Wal#read}). Step with {@link #next()}, then look at {@link #lsn()}, {@link #type()}, {@link #payload()} and
 * {@link #nextLsn()}. Segment seals are skipped. Every record's CRC is checked again (unless the caller says it already was, see
 * {@link #checkedBefore}); a bad one raises {@link CorruptionException}. Reads the
 * segment files itself, a window at a time ({@link WalSegmentWindow}), so it may run while the WAL is appended to.
 * Not thread-safe.
 */
public final class WalReader implements AutoCloseable {
    private final FileIOFactory io;
    private final Path dir;
    private final long segmentSize;
    private final long endLsn;
    private final CRC32C crc = new CRC32C();

    /** The segment being read, a stretch at a time: records are checked and read through it. */
    private final WalSegmentWindow window;
    /** Records below this LSN are not checked again (see {@link #checkedBefore}). */
    private long checkedBefore;
    private long nextLsn;
    /** Whether a record is current: {@link #next()} returned true and nothing moved since. */
    private boolean current;
    private long lsn = -1;
    private int type;
    /** Where the current record's payload lies: {@code payloadBytes} at {@code payloadAt} of the window's buffer. */
    private ByteBuffer payloadHolder;
    private int payloadAt;
    private int payloadBytes;
    /**
     * The current record's payload once {@link #payload()} was asked for it, or null: copied into {@code payloadCopy}
     * and shown through {@code payloadView}, both reused from record to record. A slice per record was most of what
     * replay's reading thread allocated, and the young generation it filled cost its first touch: on this project's
     * VMs (about 12 µs a 4 KiB page) that was some 0.9 s of reading 14 M records, against 0.45-0.54 s in all.
     */
    private ByteBuffer payload;
    private ByteBuffer payloadCopy;
    private ByteBuffer payloadView;

    WalReader(FileIOFactory io, Path dir, long segmentSize, long fromLsn, long endLsn) {
        this.io = io;
        this.dir = dir;
        this.segmentSize = segmentSize;
        this.endLsn = endLsn;
        this.nextLsn = fromLsn;
        this.window = new WalSegmentWindow(segmentSize);
        if (fromLsn < endLsn) checkStart(fromLsn);
    }

    /** A start must be a record (or the zero end of a segment's records): checked once, to fail early and clearly. */
    private void checkStart(long fromLsn) {
        int off = WalSegmentDescriptor.offset(fromLsn, segmentSize);
        WalSegmentWindow w = segmentAt(WalSegmentDescriptor.segmentIndex(fromLsn, segmentSize), fromLsn);
        Path file = w.path();
        boolean boundary;
        if (off < HEADER_SIZE || off % WalSegmentDescriptor.RECORD_ALIGNMENT != 0) {
            boundary = false;
        } else if (w.length(off) == 0) {
            boundary = w.isZero(off, (int) segmentSize);
        } else {
            boundary = off + RECORD_HEADER_SIZE <= segmentSize
                    && w.cover(off, RECORD_HEADER_SIZE).getLong(off - w.base() + LSN_OFFSET) == fromLsn;
        }
        if (!boundary) {
            close();
            throw new IllegalArgumentException("LSN " + fromLsn + " is not a WAL record boundary (segment "
                    + file.getFileName() + ", offset " + off + ")");
        }
    }

    /**
     * Steps to the next record.
     *
     * @return false at the end (the reader's end LSN)
     * @throws CorruptionException when a record fails its checks (names the file and offset)
     */
    public boolean next() {
        current = false;
        payload = null;
        while (nextLsn < endLsn) {
            long index = WalSegmentDescriptor.segmentIndex(nextLsn, segmentSize);
            int off = WalSegmentDescriptor.offset(nextLsn, segmentSize);
            WalSegmentWindow w = segmentAt(index, nextLsn);
            // every record before the end was whole before this reader was made, and so in the file it copies from
            int length = w.length(off);
            if (length == 0) {
                nextLsn = WalSegmentDescriptor.firstLsn(index + 1, segmentSize); // rest of this segment is empty
                continue;
            }
            if (nextLsn >= checkedBefore) {
                String bad = w.checkRecord(off, crc);
                if (bad != null) throw new CorruptionException("WAL record at LSN " + nextLsn + ": " + bad, w.path(), off);
            }
            ByteBuffer b = w.cover(off, length);
            int at = off - w.base();
            long recordLsn = nextLsn;
            nextLsn = WalSegmentDescriptor.endLsn(index, off + WalSegmentDescriptor.aligned(length), segmentSize);
            int recordType = b.get(at + TYPE_OFFSET) & 0xFF;
            if (recordType == WalSegmentDescriptor.SEAL_TYPE) continue; // the WAL's own bookkeeping
            lsn = recordLsn;
            type = recordType;
            payloadHolder = b;
            payloadAt = at + PAYLOAD_OFFSET;
            payloadBytes = length - RECORD_HEADER_SIZE;
            current = true;
            return true;
        }
        return false;
    }

    /**
     * After {@link #next()} threw a {@link CorruptionException} for the record at {@link #nextLsn()}, moves past it:
     * to the next aligned offset of its segment where a whole, valid record starts (the offline check's rule, see
     * {@link WalFileCheck}), or to the next segment's first LSN when none does or the segment itself is unreadable.
     * Returns the new {@link #nextLsn()}. For tools that show what is readable around damage no recovery reads;
     * recovery never skips a record.
     */
    public long skipDamaged() {
        long index = WalSegmentDescriptor.segmentIndex(nextLsn, segmentSize);
        int next = window.index() == index
                ? WalRecordScan.nextValidRecord(window, WalSegmentDescriptor.offset(nextLsn, segmentSize), crc) : -1;
        nextLsn = next >= 0 ? WalSegmentDescriptor.lsn(index, next, segmentSize) : WalSegmentDescriptor.firstLsn(index + 1, segmentSize);
        return nextLsn;
    }

    /**
     * Tells the reader that every record before {@code lsn} was checked (length, LSN and CRC) since the WAL was
     * opened — recovery passes the position open's scan validated up to — so it does not check them again: recovery
     * then reads each record once, not twice, and never touches the bodies of records it skips (physical records,
     * during logical replay). Records from {@code lsn} on are checked as usual.
     */
    public void checkedBefore(long lsn) {
        checkedBefore = lsn;
    }

    /** The current record's LSN. */
    public long lsn() {
        checkRecord();
        return lsn;
    }

    /** The current record's type, 1..255. */
    public int type() {
        checkRecord();
        return type;
    }

    /**
     * The current record's payload: a read-only little-endian view from index 0, valid until the next step (the reader
     * reuses it for the next record's); the same view each time it is asked for during one record.
     */
    public ByteBuffer payload() {
        checkRecord();
        if (payload == null) {
            if (payloadCopy == null || payloadCopy.capacity() < payloadBytes) {
                payloadCopy = ByteBuffer.allocate(Math.max(payloadBytes, 4096));
                payloadView = payloadCopy.asReadOnlyBuffer();
            }
            payloadCopy.put(0, payloadHolder, payloadAt, payloadBytes);
            payload = payloadView.clear().limit(payloadBytes).order(ByteOrder.LITTLE_ENDIAN);
        }
        return payload;
    }

    /** The LSN after the current record (before the first step: the start LSN); where a later read may resume. */
    public long nextLsn() {
        return nextLsn;
    }

    /** The LSN this reader stops at. */
    public long endLsn() {
        return endLsn;
    }

    private void checkRecord() {
        if (!current) throw new NoSuchElementException("no current WAL record: call next() first");
    }

    private WalSegmentWindow segmentAt(long index, long forLsn) {
        if (window.index() == index) return window;
        window.close();
        Path path = dir.resolve(WalSegmentDescriptor.fileName(index));
        if (!io.exists(path)) {
            // the segment being written may not have its name yet (WalSegmentCloser), or get it between these checks:
            // then neither file was there when looked at, and its name is there now
            Path temp = WalSegment.tempPath(dir, index);
            if (io.exists(temp)) path = temp;
            else if (!io.exists(path)) {
                throw new CorruptionException("WAL segment holding LSN " + forLsn + " does not exist", path,
                        WalSegmentDescriptor.offset(forLsn, segmentSize));
            }
        }
        if (!openRenamedMeanwhile(path, index)) throw new CorruptionException("WAL segment has the wrong size", path, 0);
        String bad = WalSegmentDescriptor.checkHeader(window.cover(0, HEADER_SIZE), index);
        if (bad != null) {
            window.close();
            throw new CorruptionException("WAL segment header: " + bad, path, 0);
        }
        return window;
    }

    /** Opens {@code path}, or the segment's name when the file was renamed to it from its temporary name meanwhile. */
    private boolean openRenamedMeanwhile(Path path, long index) {
        try {
            return window.open(io, path, index);
        } catch (StorageException e) {
            Path named = dir.resolve(WalSegmentDescriptor.fileName(index));
            if (path.equals(named) || !io.exists(named)) throw e;
            return window.open(io, named, index);
        }
    }

    @Override
    public void close() {
        current = false;
        payload = null;
        payloadHolder = null;
        WalSegment.closeQuietly(window);
    }
}
