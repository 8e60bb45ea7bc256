package dev.varve.core.wal;

import static dev.varve.core.wal.WalSegmentDescriptor.LENGTH_OFFSET;
import static dev.varve.core.wal.WalSegmentDescriptor.RECORD_HEADER_SIZE;

import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;
import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.zip.CRC32C;

/**
 * How the WAL's records are read — by the open's scan, a {@link WalReader} and the offline check — a stretch of one
 * segment at a time: bytes [base, base + filled) of the segment, copied from its file with {@code pread} into a buffer
 * the window keeps from segment to segment. Index {@code i} of {@link #cover}'s buffer is segment offset
 * {@code base + i}; {@code base} is a multiple of 4096, so a record's alignment and a sector's are the same in both.
 *
 * <p>Why not map each segment, as the WAL's writer does: a fresh mapping faults each 4 KiB page in, which cost 2.3-3.1
 * µs a page on this project's VMs against 0.6-0.7 µs for the same page read into a reused buffer — at 1 GiB of WAL,
 * read once by the open's scan and again by replay, about a second of a recovery (docs/performance.md, "Reading the
 * WAL with pread"). A window of {@value #BYTES} bytes stays in the core's caches between the copy and the CRC; a
 * record longer than it grows the buffer to hold it whole. The buffer starts at {@value #FIRST_BYTES} bytes and doubles
 * at each refill up to {@value #BYTES}: a reader made for one record (a page rebuild's copy of an older batch record,
 * {@code varve wal-dump} from an LSN) pays for 64 KiB of direct memory, zeroed and first touched, not for 1 MiB.
 *
 * <p>Records a reader reads were whole before it was made ({@link Wal#read} fixes its end first, forcing a staged
 * segment's records into the file), so a copy made later holds them whole; bytes the window copies beyond the reader's
 * end may be mid-write, and no caller interprets them. Not thread-safe.
 */
final class WalSegmentWindow implements AutoCloseable {
    static final int BYTES = 1 << 20;
    static final int FIRST_BYTES = 64 << 10;
    private static final int ALIGNMENT = 4096;

    private final long segmentSize;
    /** The file read from, or null when the window holds the whole segment already ({@link #over}). */
    private FileIO file;
    private Path path;
    private long index = -1;
    /** Where the copies go; a read-only little-endian view of it is what callers read. */
    private ByteBuffer buffer;
    private ByteBuffer view;
    private int base;
    private int filled;

    WalSegmentWindow(long segmentSize) {
        this.segmentSize = segmentSize;
    }

    /** A window over a whole segment already in memory (the offline check's copy): {@link #cover} never reads. */
    static WalSegmentWindow over(ByteBuffer wholeSegment, long index, Path path) {
        WalSegmentWindow w = new WalSegmentWindow(wholeSegment.capacity());
        w.index = index;
        w.path = path;
        w.buffer = wholeSegment;
        w.view = WalSegmentDescriptor.readView(wholeSegment);
        w.filled = wholeSegment.capacity();
        return w;
    }

    /**
     * Reads segment {@code index} from {@code path} from now on, closing the file read before; false when the file does
     * not have the segment size (see {@link WalSegment#openFile}, which throws for a valid segment of another size).
     */
    boolean open(FileIOFactory io, Path path, long index) {
        close();
        FileIO f = WalSegment.openFile(io, path, index, segmentSize);
        if (f == null) return false;
        this.file = f;
        this.path = path;
        this.index = index;
        base = 0;
        filled = 0;
        return true;
    }

    /** The segment read, or -1 when none is open. */
    long index() {
        return index;
    }

    Path path() {
        return path;
    }

    long segmentSize() {
        return segmentSize;
    }

    /** Bytes the window's buffer holds (0 before its first read): what a refill copies at most. */
    int capacity() {
        return buffer == null ? 0 : buffer.capacity();
    }

    /** The segment offset of index 0 of {@link #cover}'s buffer. */
    int base() {
        return base;
    }

    /**
     * Makes segment bytes [off, off + len) readable and returns the buffer holding them at {@code off - base()} on: a
     * read-only little-endian view, valid until the next call (which may copy other bytes into it, or replace it with a
     * bigger one). {@code len} is cut at the segment's end.
     */
    ByteBuffer cover(int off, int len) {
        int end = (int) Math.min((long) off + len, segmentSize);
        if (off >= base && end <= base + filled) return view;
        int from = off & -ALIGNMENT;
        int needed = end - from;
        if (buffer == null || buffer.capacity() < Math.max(needed, BYTES)) {
            // the buffer doubles at each refill until it is a window; a record longer than that grows it to its length
            int next = buffer == null ? FIRST_BYTES : Math.min(2 * buffer.capacity(), BYTES);
            grow(Math.max(needed, next), off);
        }
        int to = (int) Math.min(segmentSize, (long) from + buffer.capacity());
        filled = 0; // until the read succeeds: a failed one leaves no stale bytes in the window
        ByteBuffer dst = buffer.clear().limit(to - from);
        try {
            while (dst.hasRemaining()) {
                if (file.read(dst, from + dst.position()) < 0) {
                    throw new EOFException("the file ends at " + (from + dst.position()) + " of its " + segmentSize + " bytes");
                }
            }
        } catch (IOException | UncheckedIOException e) {
            IOException cause = WalSegment.unwrap(e);
            throw new StorageException("cannot read WAL segment " + index + " bytes [" + from + ", " + to + "): "
                    + WalSegment.reason(e), path, cause);
        }
        base = from;
        filled = to - from;
        return view;
    }

    /**
     * A buffer of {@code bytes} rounded up to 4096 (a record at {@code off} may need more than a window); a JVM whose
     * direct memory cannot hold it is refused naming the record and the limit (a bare OutOfMemoryError says neither).
     */
    private void grow(int bytes, int off) {
        int capacity = (bytes + ALIGNMENT - 1) & -ALIGNMENT;
        try {
            buffer = ByteBuffer.allocateDirect(capacity).order(ByteOrder.LITTLE_ENDIAN);
        } catch (OutOfMemoryError e) {
            throw new StorageException("cannot read WAL segment " + index + ": reading the record at offset " + off
                    + " needs a buffer of " + capacity + " bytes of direct memory, which the JVM refused (" + e.getMessage()
                    + "); raise -XX:MaxDirectMemorySize by that much", path, e);
        }
        view = WalSegmentDescriptor.readView(buffer);
        filled = 0;
    }

    /** The record's length field at segment offset {@code off}; 0 when fewer than its 4 bytes are left in the segment. */
    int length(int off) {
        if (off + Integer.BYTES > segmentSize) return 0;
        return cover(off, RECORD_HEADER_SIZE).getInt(off - base + LENGTH_OFFSET);
    }

    /**
     * Why the record at segment offset {@code off} is not valid, or null when it is ({@link WalSegmentDescriptor#checkRecord});
     * a record that is valid is covered whole when this returns.
     */
    String checkRecord(int off, CRC32C crc) {
        int length = length(off);
        String bad = WalSegmentDescriptor.badLength(length, off, segmentSize);
        if (bad != null) return bad;
        ByteBuffer b = cover(off, length);
        return WalSegmentDescriptor.checkRecord(b, off - base, index, off, segmentSize, crc);
    }

    /** True when segment bytes [from, to) are all zero. */
    boolean isZero(int from, int to) {
        for (int p = from; p < to; ) {
            // with p's offset in its 4 KiB, still one window of the buffer's size (or of the doubled one cover makes)
            int n = Math.min(to - p, (buffer == null ? FIRST_BYTES : buffer.capacity()) - ALIGNMENT);
            ByteBuffer b = cover(p, n);
            if (!WalSegmentDescriptor.isZero(b, p - base, p - base + n)) return false;
            p += n;
        }
        return true;
    }

    /** Closes the file read (the buffer stays, for the next segment); {@link #index} is -1 until the next open. */
    @Override
    public void close() {
        FileIO f = file;
        file = null;
        if (f == null) return;
        long closed = index;
        index = -1;
        try {
            f.close();
        } catch (IOException e) {
            throw new StorageException("cannot close WAL segment " + closed, path, e);
        }
    }
}
