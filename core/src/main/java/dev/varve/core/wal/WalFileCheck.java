package dev.varve.core.wal;

import static dev.varve.core.wal.WalSegmentDescriptor.HEADER_SIZE;

import dev.varve.core.io.DamageSink;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.zip.CRC32C;

/**
 * Offline check of WAL segment files (operator tools): size, header and every record's length, CRC32C and LSN,
 * reported to a {@link DamageSink} instead of cut away as opening the WAL does. A bad record after which the
 * segment holds only zeros, in the last segment, is a torn tail a crash left: recovery cuts it, so it is reported
 * separately ({@link Result#tornTail}), not as damage. Reads only.
 */
public final class WalFileCheck {
    /** What the check saw: segments, records, and the torn tail if any (null when none). */
    public record Result(int segments, long records, long segmentSize, String tornTail) {
    }

    private WalFileCheck() {
    }

    /** The segment size recorded in the header of a segment file, or -1 when the header is unreadable. */
    public static long segmentSizeOf(FileIOFactory io, Path segment) throws IOException {
        try (FileIO f = io.open(segment, false)) {
            ByteBuffer h = ByteBuffer.allocate(HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
            if (f.read(h, 0) < HEADER_SIZE || WalSegmentDescriptor.checkHeader(h, WalSegmentDescriptor.parseIndex(segment)) != null) return -1;
            return WalSegmentDescriptor.headerSegmentSize(h);
        }
    }

    /** Checks every segment in {@code dir}, whose segments are {@code segmentSize} bytes. */
    public static Result check(FileIOFactory io, Path dir, long segmentSize, DamageSink sink) throws IOException {
        int segments = 0;
        long records = 0;
        String torn = null;
        CRC32C crc = new CRC32C();
        java.util.List<Path> files = new java.util.ArrayList<>();
        for (Path p : io.list(dir, "wal-")) if (WalSegmentDescriptor.parseIndex(p) >= 0) files.add(p);
        for (int i = 0; i < files.size(); i++) {
            Path p = files.get(i);
            long index = WalSegmentDescriptor.parseIndex(p);
            segments++;
            ByteBuffer b;
            try (FileIO f = io.open(p, false)) {
                long size = f.size();
                if (size != segmentSize) {
                    sink.damage(p, Math.min(size, segmentSize), "segment has " + size + " bytes, segments are " + segmentSize);
                    if (size < HEADER_SIZE || size > segmentSize) continue;
                }
                b = ByteBuffer.allocate((int) segmentSize).order(ByteOrder.LITTLE_ENDIAN);
                f.read(b, 0);
            }
            String bad = WalSegmentDescriptor.checkHeader(b, index);
            if (bad != null) {
                sink.damage(p, 0, bad);
                continue;
            }
            int off = HEADER_SIZE;
            while (off < segmentSize) {
                if (b.getInt(off) == 0) {
                    if (!WalSegmentDescriptor.isZero(b, off, (int) segmentSize)) sink.damage(p, off, "zero record length followed by non-zero bytes");
                    break;
                }
                bad = WalSegmentDescriptor.checkRecord(b, index, off, segmentSize, crc);
                if (bad != null) {
                    boolean tail = i == files.size() - 1 && WalSegmentDescriptor.isZero(b, Math.min((int) segmentSize, off + maxRecordEnd(b, off, segmentSize)), (int) segmentSize);
                    if (tail) torn = p.getFileName() + " at offset " + off + ": " + bad;
                    else sink.damage(p, off, bad);
                    break;
                }
                records++;
                off += WalSegmentDescriptor.aligned(b.getInt(off));
            }
        }
        return new Result(segments, records, segmentSize, torn);
    }

    /** How far a bad record at {@code off} may reach: its length field if plausible, else nothing past its header. */
    private static int maxRecordEnd(ByteBuffer b, int off, long segmentSize) {
        int len = b.getInt(off);
        return len >= WalSegmentDescriptor.RECORD_HEADER_SIZE && len <= segmentSize - off ? WalSegmentDescriptor.aligned(len) : WalSegmentDescriptor.RECORD_HEADER_SIZE;
    }
}
