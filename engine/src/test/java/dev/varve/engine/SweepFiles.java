package dev.varve.engine;

import dev.varve.core.wal.WalSegmentDescriptor;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The kinds of file a store writes, told apart by name (paths relative to the store directory, the archive at its
 * default {@code <path>/archive}), and the part of each file that holds data. A file of no known kind fails the
 * sweep, so a new kind of file is never left out of it.
 */
final class SweepFiles {
    /** Kind name → pattern of the relative path, most specific first. */
    private static final Map<String, Pattern> KINDS = new LinkedHashMap<>();

    static {
        // varve.lock is empty: the lock is the OS lock on the open channel, so only its deletion is a trial
        kind("lock", "(archive/)?varve\\.lock"); // the store directory's and the archive directory's
        kind("catalog-page", "pages/t00000-p\\d+\\.page"); // table 0: the catalog of tables
        kind("page", "pages/t\\d+-p\\d+\\.page");
        kind("wal-segment", "wal/wal-\\d+\\.seg");
        kind("wal-durable-copy", "wal/wal-\\d+\\.seg\\.durable"); // what forces write: the segment's name once it is whole
        kind("wal-temp", "wal/.*\\.tmp");
        kind("cp-start", "checkpoints/cp-\\d+-start\\.bin");
        kind("cp-end", "checkpoints/cp-\\d+-end\\.bin");
        kind("recovery-file", "checkpoints/cp-\\d+-recovery-\\d+\\.bin");
        kind("checkpoint-temp", "checkpoints/.*\\.tmp");
        kind("snapshots.log", "archive/snapshots\\.log");
        kind("drops.log", "archive/drops\\.log");
        kind("joins.log", "archive/joins\\.log");
        kind("moves.log", "archive/moves\\.log");
        kind("archive-marks.log", "archive/archive-marks\\.log");
        kind("capture-counts", "archive/capture-counts\\.bin"); // figures only: damage is logged and costs archive byte counts, never data
        kind("retention.policy", "archive/retention\\.policy"); // configuration: a writable open writes its own over damage
        kind("pagelog", "archive/level-\\d+/pagelog-\\d+\\.log");
        kind("maplog-L0", "archive/level-\\d+/maplog-L0\\.log");
        kind("maplog-L0-portion", "archive/level-\\d+/maplog-L0\\.log\\.\\d+");
        kind("skippy-level", "archive/level-\\d+/maplog-L[1-9]\\d*\\.log");
        kind("skippy-level-portion", "archive/level-\\d+/maplog-L[1-9]\\d*\\.log\\.\\d+");
        kind("skippy-uplinks", "archive/level-\\d+/skippy-uplinks-L\\d+\\.log");
        kind("skippy-uplinks-portion", "archive/level-\\d+/skippy-uplinks-L\\d+\\.log\\.\\d+");
        kind("extent", "archive/level-\\d+/extent-\\d+\\.dat");
        kind("page-temp", "pages/.*\\.creating"); // a page file whose creation a kill cut short: deleted at open
        kind("archive-temp", "archive/.*\\.(tmp|creating)"); // a segment, part or extent a kill cut short: deleted by recovery
    }

    private SweepFiles() {
    }

    private static void kind(String name, String regex) {
        KINDS.put(name, Pattern.compile(regex));
    }

    /** Every kind, in the order of the printed table. */
    static Iterable<String> kinds() {
        return KINDS.keySet();
    }

    /** The kind of a file (path relative to the store directory), or null when the sweep knows no such kind. */
    static String kindOf(Path relative) {
        String p = relative.toString().replace('\\', '/');
        for (var e : KINDS.entrySet()) if (e.getValue().matcher(p).matches()) return e.getKey();
        return null;
    }

    /**
     * Bytes of the file that hold data. A WAL segment is preallocated and mapped: its records run from the header
     * to the first place where no record of this segment follows (length 0, a length past the end, or an LSN that is
     * not the record's position, i.e. a stale record of the segment's previous use). Every other file is written
     * to its end.
     */
    static long usedBytes(Path file, String kind) throws IOException {
        if (!kind.equals("wal-segment")) return Files.size(file);
        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN);
        long segmentSize = b.capacity(); // a segment file is exactly its segment size
        long index = b.getLong(WalSegmentDescriptor.SEGMENT_INDEX_OFFSET);
        int end = WalSegmentDescriptor.HEADER_SIZE;
        int off = end;
        while (off + WalSegmentDescriptor.RECORD_HEADER_SIZE <= b.capacity()) {
            int length = b.getInt(off + WalSegmentDescriptor.LENGTH_OFFSET);
            if (length < WalSegmentDescriptor.RECORD_HEADER_SIZE || off + (long) length > b.capacity()) break;
            if (b.getLong(off + WalSegmentDescriptor.LSN_OFFSET) != WalSegmentDescriptor.lsn(index, off, segmentSize)) break;
            end = off + length;
            off += (length + WalSegmentDescriptor.RECORD_ALIGNMENT - 1) & -WalSegmentDescriptor.RECORD_ALIGNMENT;
        }
        return end;
    }

    /** Shortens a file to {@code length} bytes. */
    static void truncate(Path file, long length) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ch.truncate(length);
            ch.force(true);
        }
    }
}
