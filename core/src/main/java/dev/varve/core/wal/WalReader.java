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
 * {@link #checkedBefore}); a bad one raises {@link CorruptionException}. Maps the
 * segments itself, so it may run while the WAL is appended to. Not thread-safe.
 */
public final class WalReader implements AutoCloseable {
    private final FileIOFactory io;
    private final Path dir;
    private final long segmentSize;
    private final long endLsn;
    private final CRC32C crc = new CRC32C();

    private WalSegment segment;
    /** {@link WalSegmentDescriptor#readView} of {@code segment}: records are checked and sliced through it. */
    private ByteBuffer view;
    /** Records below this LSN are not checked again (see {@link #checkedBefore}). */
    private long checkedBefore;
    private long nextLsn;
    private long lsn = -1;
    private int type;
    private ByteBuffer payload;

    WalReader(FileIOFactory io, Path dir, long segmentSize, long fromLsn, long endLsn) {
        this.io = io;
        this.dir = dir;
        this.segmentSize = segmentSize;
        this.endLsn = endLsn;
        this.nextLsn = fromLsn;
        if (fromLsn < endLsn) checkStart(fromLsn);
    }

    /** A start must be a record (or the zero end of a segment's records): checked once, to fail early and clearly. */
    private void checkStart(long fromLsn) {
        int off = WalSegmentDescriptor.offset(fromLsn, segmentSize);
        WalSegment seg = segmentAt(WalSegmentDescriptor.segmentIndex(fromLsn, segmentSize), fromLsn);
        ByteBuffer b = seg.buffer;
        boolean boundary;
        if (off < HEADER_SIZE || off % WalSegmentDescriptor.RECORD_ALIGNMENT != 0) {
            boundary = false;
        } else if (b.getInt(off) == 0) {
            boundary = WalSegmentDescriptor.isZero(b, off, (int) segmentSize);
        } else {
            boundary = b.getLong(off + LSN_OFFSET) == fromLsn;
        }
        if (!boundary) {
            close();
            throw new IllegalArgumentException("LSN " + fromLsn + " is not a WAL record boundary (segment "
                    + seg.path.getFileName() + ", offset " + off + ")");
        }
    }

    /**
     * Steps to the next record.
     *
     * @return false at the end (the reader's end LSN)
     * @throws CorruptionException when a record fails its checks (names the file and offset)
     */
    public boolean next() {
        payload = null;
        while (nextLsn < endLsn) {
            long index = WalSegmentDescriptor.segmentIndex(nextLsn, segmentSize);
            int off = WalSegmentDescriptor.offset(nextLsn, segmentSize);
            WalSegment seg = segmentAt(index, nextLsn);
            ByteBuffer b = view;
            // acquire pairs with the writer's release: the body is complete once the length is seen
            int length = WalSegmentDescriptor.lengthAcquire(b, off);
            if (length == 0) {
                nextLsn = WalSegmentDescriptor.firstLsn(index + 1, segmentSize); // rest of this segment is empty
                continue;
            }
            if (nextLsn >= checkedBefore) {
                String bad = WalSegmentDescriptor.checkRecord(b, index, off, segmentSize, crc);
                if (bad != null) throw new CorruptionException("WAL record at LSN " + nextLsn + ": " + bad, seg.path, off);
            }
            long at = nextLsn;
            nextLsn = WalSegmentDescriptor.endLsn(index, off + WalSegmentDescriptor.aligned(length), segmentSize);
            int recordType = b.get(off + TYPE_OFFSET) & 0xFF;
            if (recordType == WalSegmentDescriptor.SEAL_TYPE) continue; // the WAL's own bookkeeping
            lsn = at;
            type = recordType;
            payload = b.slice(off + PAYLOAD_OFFSET, length - RECORD_HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
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
        int next = segment != null && segment.index == index
                ? WalOpenScan.nextValidRecord(view, index, WalSegmentDescriptor.offset(nextLsn, segmentSize), crc) : -1;
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

    /** The current record's payload: a read-only little-endian view, valid until the next step. */
    public ByteBuffer payload() {
        checkRecord();
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
        if (payload == null) throw new NoSuchElementException("no current WAL record: call next() first");
    }

    private WalSegment segmentAt(long index, long forLsn) {
        if (segment != null && segment.index == index) return segment;
        if (segment != null) {
            segment.close();
            segment = null;
            view = null;
        }
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
        WalSegment seg = openRenamedMeanwhile(path, index);
        if (seg == null) throw new CorruptionException("WAL segment has the wrong size", path, 0);
        String bad = WalSegmentDescriptor.checkHeader(seg.buffer, index);
        if (bad != null) {
            seg.close();
            throw new CorruptionException("WAL segment header: " + bad, path, 0);
        }
        segment = seg;
        view = WalSegmentDescriptor.readView(seg.buffer);
        return seg;
    }

    /** Opens {@code path}, or the segment's name when the file was renamed to it from its temporary name meanwhile. */
    private WalSegment openRenamedMeanwhile(Path path, long index) {
        try {
            return WalSegment.open(io, path, index, segmentSize);
        } catch (StorageException e) {
            Path named = dir.resolve(WalSegmentDescriptor.fileName(index));
            if (path.equals(named) || !io.exists(named)) throw e;
            return WalSegment.open(io, named, index, segmentSize);
        }
    }

    @Override
    public void close() {
        payload = null;
        if (segment != null) {
            WalSegment.closeQuietly(segment);
            segment = null;
            view = null;
        }
    }
}
