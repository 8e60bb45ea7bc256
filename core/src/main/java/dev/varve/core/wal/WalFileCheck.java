package dev.varve.core.wal;

import static dev.varve.core.wal.WalSegmentDescriptor.HEADER_SIZE;

import dev.varve.config.WalSyncMode;
import dev.varve.core.io.DamageSink;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * Offline check of WAL segment files (operator tools): size, header and every record's length, CRC32C and LSN,
 * reported to a {@link DamageSink} instead of cut away as opening the WAL does. What opening would cut as a torn tail
 * (by {@link WalOpenScan}'s rule, the one rule for both) is reported separately ({@link Result#tornTail}), not as
 * damage. A segment open would read from its {@linkplain WalSegmentCopy durable copy} is checked in the copy. Reads only.
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
            if (f.read(h, 0) < HEADER_SIZE) return -1;
            WalSegmentDescriptor.refuseOtherVersion(h, segment);
            if (WalSegmentDescriptor.checkHeader(h, WalSegmentDescriptor.parseIndex(segment)) != null) return -1;
            return WalSegmentDescriptor.headerSegmentSize(h);
        }
    }

    /**
     * The segment size of the WAL in {@code dir}: what the first segment header that checks out records; when none
     * does, the size of the segment files (each is created at the full segment size), if they all have one and it is a
     * valid segment size; -1 when neither tells. Without the second, a WAL whose one header is damaged was read with
     * the default size, and its damage reported as every segment being of the wrong size.
     */
    public static long segmentSizeOfWal(FileIOFactory io, Path dir) throws IOException {
        List<Path> segments = new ArrayList<>();
        for (Path p : io.list(dir, WalSegmentDescriptor.FILE_PREFIX)) if (WalSegmentDescriptor.parseIndex(p) >= 0) segments.add(p);
        segments.sort(Comparator.comparingLong(WalSegmentDescriptor::parseIndex));
        for (Path p : segments) {
            long s = segmentSizeOf(io, p);
            if (s > 0) return s;
        }
        long fileSize = -1;
        for (Path p : segments) {
            long size;
            try (FileIO f = io.open(p, false)) {
                size = f.size();
            }
            if (fileSize >= 0 && size != fileSize) return -1;
            fileSize = size;
        }
        try {
            WalSegmentDescriptor.checkSegmentSize(fileSize);
        } catch (IllegalArgumentException e) {
            return -1;
        }
        return fileSize;
    }

    /**
     * Checks every segment in {@code dir}, whose segments are {@code segmentSize} bytes. Each segment's tail is judged
     * by the walSyncMode that wrote it, which its header records; {@code mode} judges a version 1 segment, which does
     * not record it. Records are judged by the rule opening the WAL applies ({@link WalOpenScan}): what open would cut
     * as a torn tail is reported as one, what open would refuse is damage, so verify and open never disagree.
     */
    public static Result check(FileIOFactory io, Path dir, long segmentSize, WalSyncMode mode, DamageSink sink) throws IOException {
        return check(io, dir, segmentSize, mode, 0, sink);
    }

    /**
     * {@link #check(FileIOFactory, Path, long, WalSyncMode, DamageSink)} for the store whose id is durable as
     * {@code storeId} (0: none is yet): a segment of another store is reported as damage, as open refuses it, and its
     * records are not checked further.
     */
    public static Result check(FileIOFactory io, Path dir, long segmentSize, WalSyncMode mode, long storeId, DamageSink sink) throws IOException {
        int segments = 0;
        long records = 0;
        String torn = null;
        CRC32C crc = new CRC32C();
        ScannedTypes heads = new ScannedTypes();
        List<Path> files = new ArrayList<>();
        for (Path p : io.list(dir, WalSegmentDescriptor.FILE_PREFIX)) if (WalSegmentDescriptor.parseIndex(p) >= 0) files.add(p);
        files.sort(Comparator.comparingLong(WalSegmentDescriptor::parseIndex));
        long unnamedIndex = -1; // a sealed last segment's successor under its temporary name, which open takes too
        for (int i = 0; i < files.size(); i++) {
            Path p = files.get(i);
            long index = i == files.size() - 1 && unnamedIndex >= 0 ? unnamedIndex : WalSegmentDescriptor.parseIndex(p);
            boolean last = i == files.size() - 1;
            WalSegmentCopy.Choice copied = WalSegmentCopy.choose(io, p, index, segmentSize, mode, !last, false); // as open chooses
            if (copied != null) p = copied.copy();
            segments++;
            ByteBuffer b;
            try (FileIO f = io.open(p, false)) {
                long size = f.size();
                // the header first: it records the segment size, so a segment whose header fails its check is reported as
                // that, not also as a file of the wrong size (judged against a size nothing read from it confirmed)
                String bad = WalSegmentDescriptor.headerProblem(f, p, index);
                if (bad != null) {
                    sink.damage(p, 0, bad);
                    continue;
                }
                if (size != segmentSize) {
                    sink.damage(p, Math.min(size, segmentSize), "segment has " + size + " bytes, segments are " + segmentSize);
                    if (size < HEADER_SIZE || size > segmentSize) continue;
                }
                b = ByteBuffer.allocate((int) segmentSize).order(ByteOrder.LITTLE_ENDIAN);
                f.read(b, 0);
            }
            String foreign = WalSegmentDescriptor.foreign(b, storeId);
            if (foreign != null) {
                sink.damage(p, WalSegmentDescriptor.STORE_TAG_OFFSET, foreign);
                continue;
            }
            WalSyncMode judged = WalSegmentDescriptor.judgedUnder(b, mode); // as open judges it
            boolean sectorTears = copied != null || judged == WalSyncMode.FSYNC; // a copy is written as FSYNC's segments are
            WalSegmentWindow segment = WalSegmentWindow.over(b, index, p);
            WalRecordScan.Stop stop = WalRecordScan.scanRecords(segment, HEADER_SIZE, !last, judged, sectorTears, crc, heads);
            records += stop.records();
            boolean reported = false;
            while (stop.reason() != null && stop.evidence() != null) { // damage, not a torn tail: name it, check on from the next valid record
                int next = WalRecordScan.nextValidRecord(segment, stop.offset(), crc);
                sink.damage(p, stop.offset(), stop.reason() + "; not a torn write: " + stop.evidence()
                        + (next < 0 ? "; no valid record follows it in the segment" : "; the next valid record starts at offset " + next));
                reported = true;
                if (next < 0) break;
                stop = WalRecordScan.scanRecords(segment, next, !last, judged, sectorTears, crc, heads);
                records += stop.records();
                reported = false;
            }
            if (stop.reason() == null && !stop.sealed() && !last) stop = WalRecordScan.unsealed(stop, index);
            if (stop.reason() == null) {
                Path successor = last && unnamedIndex < 0 ? WalOpenScan.unnamedSuccessor(io, dir, stop, index) : null;
                if (successor != null) {
                    unnamedIndex = index + 1;
                    files.add(successor);
                } else if (last && stop.sealed()) {
                    sink.damage(dir.resolve(WalSegmentDescriptor.fileName(index + 1)), 0, "segment " + p.getFileName()
                            + " is sealed, so its successor was created, but that file is missing");
                }
            } else if (stop.evidence() == null) {
                torn = p.getFileName() + " at offset " + stop.offset() + ": " + stop.reason() + " (judged under " + judged
                        + (WalSegmentDescriptor.writtenUnder(b) == null ? ", the given mode: the segment does not record the one that wrote it)"
                        : ", the mode that wrote the segment)");
            } else if (!reported) {
                sink.damage(p, stop.offset(), stop.reason() + "; not a torn write: " + stop.evidence());
            }
        }
        return new Result(segments, records, segmentSize, torn);
    }
}
