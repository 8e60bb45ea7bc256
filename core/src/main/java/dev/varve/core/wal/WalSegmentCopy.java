package dev.varve.core.wal;

import static dev.varve.core.wal.WalSegmentDescriptor.HEADER_SIZE;

import dev.varve.config.WalSyncMode;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.StorageException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.zip.CRC32C;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A LOG_ONLY or BACKGROUND segment's durable copy, {@code <segment file name>.durable}: what forces write instead of
 * forcing the mapping appends go to. A force writes the forced range of the mapping into the copy with one
 * {@code pwrite} and {@code fdatasync}s the copy, as FSYNC's staging buffer reaches its segment; once the segment is
 * sealed and forced whole, the copy is renamed over the segment file, whose old file (mapped, its pages dirty and never
 * written) is then truncated, so its pages are dropped, not written back.
 *
 * <p>Design note: why a second file. Appending through a mapping costs no system call, and the pages are the page
 * cache's, so a record survives a process crash once it is published. But writing back a page that a process maps
 * write-protects it ({@code folio_mkclean}) and flushes it from the TLB of every core the process runs on: one
 * inter-processor interrupt per 4 KiB page, some 16,000 for each 64 MiB segment forced, which cost a writer on the
 * other core a quarter to a third of its throughput on this project's 2-vCPU VMs (docs/performance.md, "The mapped
 * WAL's forces and the writer's TLB"). A {@code pwrite} per append instead costs a system call per put, more than
 * the flushes did. With a copy, the mapped file is never written back while it is mapped.
 *
 * <p>Open. The segment file is read as it always was: after a process crash it holds every record published, and a
 * copy beside it holds a prefix of them. After a power loss the segment file may have lost what the kernel had not
 * written back — the copy holds every record forced. So a segment is read from its copy only when the copy is whole and
 * its records reach further than the file's ({@link #choose}), judged by the mode that wrote them, with a power cut's
 * unwritten sectors in a force's last record a tear, as in FSYNC's segments, which are written as copies are. The open
 * then copies those records into the segment file and forces it ({@link WalOpenScan#carryOut}); a damaged or short copy
 * never hides records the segment file holds.
 */
final class WalSegmentCopy {
    private static final Logger LOG = LoggerFactory.getLogger(WalSegmentCopy.class);
    static final String SUFFIX = ".durable";
    private static final int COPY_BYTES = 1 << 20;

    /** A segment read from its copy: the copy, where the segment file's records end, and where the copy's do. */
    record Choice(Path copy, int fileEnd, int copyEnd) {
    }

    private WalSegmentCopy() {
    }

    /** The durable copy of segment {@code index} in {@code dir}, whatever name its segment file has. */
    static Path path(Path dir, long index) {
        return dir.resolve(WalSegmentDescriptor.fileName(index) + SUFFIX);
    }

    /** The index of a copy's segment, or -1 when {@code file} is not a durable copy. */
    static long parseIndex(Path file) {
        String name = file.getFileName().toString();
        if (!name.endsWith(SUFFIX)) return -1;
        return WalSegmentDescriptor.parseIndex(file.resolveSibling(name.substring(0, name.length() - SUFFIX.length())));
    }

    /**
     * Whether segment {@code index}, whose file is {@code file}, is read from its durable copy (see the class comment),
     * and the ends of both; null when it is read from its file. The copy is read when it is whole and its records reach
     * past the file's first stop and at least as far as the file's last valid record, wherever that lies: so a file
     * with damage, or pages a power loss left out of order, loses to a copy holding every record it holds (its damage
     * is logged), and is read — its damage reported by the scan — when it holds records the copy lacks; a copy with
     * damage past the file's records is read, and the scan reports its damage. {@code durable} says a later segment
     * exists; with {@code truncateDamage} (the operator accepts losing what follows damage) a copy reaching past the
     * file's first stop is read. Reads only.
     */
    static Choice choose(FileIOFactory io, Path file, long index, long segmentSize, WalSyncMode mode, boolean durable,
                         boolean truncateDamage) {
        Path copy = path(file.getParent(), index);
        if (!io.exists(copy)) return null;
        Reach inFile;
        try {
            inFile = reach(io, file, index, segmentSize, mode, false, durable);
        } catch (StorageException e) {
            inFile = null; // a segment of another size: the scan (or verify) reports it
        }
        if (inFile == null) return null; // not whole: the scan judges the file
        Reach inCopy;
        try {
            inCopy = reach(io, copy, index, segmentSize, mode, true, durable);
        } catch (StorageException e) {
            inCopy = null;
        }
        if (inCopy == null) {
            LOG.warn("WAL segment {} is read from its file: its durable copy {} is not whole", index, copy);
            return null;
        }
        int fileStop = inFile.first().offset();
        int copyEnd = inCopy.first().offset();
        if (copyEnd <= fileStop || copyEnd < inFile.last() && !truncateDamage) return null;
        if (inFile.first().evidence() != null) {
            LOG.warn("WAL segment {} is read from its durable copy {}, whose records reach offset {}: the file is damaged at offset {} ({})",
                    index, copy, copyEnd, fileStop, inFile.first().reason());
        }
        return new Choice(copy, fileStop, copyEnd);
    }

    /** Where a file's records first stop, and where the last valid record anywhere in it ends. */
    private record Reach(WalRecordScan.Stop first, int last) {
    }

    /**
     * How far the records of {@code path} reach, judged by the mode its header records (or {@code mode}, if it records
     * none), as a durable copy when {@code copy} (see {@link WalRecordScan#scanRecords}); null when the file is not whole
     * (size, header).
     */
    private static Reach reach(FileIOFactory io, Path path, long index, long segmentSize, WalSyncMode mode, boolean copy, boolean durable) {
        try (WalSegmentWindow w = new WalSegmentWindow(segmentSize)) {
            if (!w.open(io, path, index)) return null;
            ByteBuffer header = w.cover(0, HEADER_SIZE);
            if (WalSegmentDescriptor.checkHeader(header, index) != null || WalSegmentDescriptor.headerSegmentSize(header) != segmentSize) {
                return null;
            }
            WalSyncMode judged = WalSegmentDescriptor.judgedUnder(header, mode);
            boolean sectorTears = copy || judged == WalSyncMode.FSYNC;
            CRC32C crc = new CRC32C();
            WalRecordScan.Stop first = WalRecordScan.scanRecords(w, HEADER_SIZE, durable, judged, sectorTears, crc, new ScannedTypes());
            int last = first.offset();
            for (WalRecordScan.Stop s = first; s.reason() != null; ) { // valid records after a bad one: where do they end?
                int next = WalRecordScan.nextValidRecord(w, s.offset(), crc);
                if (next < 0) break;
                s = WalRecordScan.scanRecords(w, next, durable, judged, sectorTears, crc, new ScannedTypes());
                last = s.offset();
            }
            return new Reach(first, last);
        }
    }

    /** Where the valid records of a whole copy of segment {@code index} first stop; 0 without one. Reads only. */
    static int end(FileIOFactory io, Path dir, long index, long segmentSize) {
        Path copy = path(dir, index);
        if (!io.exists(copy)) return 0;
        try {
            Reach r = reach(io, copy, index, segmentSize, WalSyncMode.LOG_ONLY, true, false);
            return r == null ? 0 : r.first().offset();
        } catch (StorageException e) {
            return 0;
        }
    }

    /** Copies bytes [from, to) of {@code copy} into {@code file} at the same offsets and forces the file. */
    static void copyInto(FileIOFactory io, Path copy, Path file, int from, int to) {
        if (to <= from) return;
        try (FileIO src = io.open(copy, false); FileIO dst = io.open(file, false)) {
            ByteBuffer b = ByteBuffer.allocateDirect(Math.min(to - from, COPY_BYTES));
            for (int p = from; p < to; p += b.capacity()) {
                b.clear().limit(Math.min(b.capacity(), to - p));
                src.read(b, p);
                dst.write(b.flip(), p);
            }
            dst.forceData();
        } catch (IOException | UncheckedIOException e) {
            throw new StorageException("cannot copy the records of " + copy.getFileName() + " into their segment: "
                    + WalSegment.reason(e), file, WalSegment.unwrap(e));
        }
    }
}
