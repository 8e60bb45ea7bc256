package dev.varve.infinispan;

import dev.varve.core.io.FileIOFactory;
import dev.varve.config.VarveConfig;
import dev.varve.engine.TableOptions;
import dev.varve.engine.Varve;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** {@link SegmentTables} below Infinispan: states of its two tables that only a crash can leave. */
@Timeout(60)
class SegmentTablesTest {
    private static final int SEGMENTS = 4;

    @TempDir
    Path dir;

    private VarveConfig config() {
        return VarveConfig.builder().path(dir).dataRegionSize(16L << 20).checkpointBufferSize(2L << 20).walSegmentSize(4L << 20).build();
    }

    /** A stored entry in {@link EntryCodec}'s format, with no value pieces, expiring at {@code expiryTime}. */
    static byte[] entry(long expiryTime) {
        return ByteBuffer.allocate(1 + 8 + 8 + 8 + 12).order(ByteOrder.LITTLE_ENDIAN).put(EntryCodec.FORMAT).putLong(expiryTime)
                .putLong(0).putLong(0).putInt(-1).putInt(-1).putInt(-1).array();
    }

    /**
     * Dropping a segment destroys the entries' partition and then the index's, each atomic on its own: a crash
     * between the two leaves index entries whose entries are gone. Purging and counting must take that state as it
     * is (drop those index entries), not fail on it for good.
     */
    @Test
    void indexEntriesLeftByACrashBetweenTheTwoDestroysArePurgedAndNotCounted() {
        try (SegmentTables t = new SegmentTables(config(), FileIOFactory.standard(), SEGMENTS)) {
            for (int i = 0; i < 10; i++) t.put(1, new byte[]{(byte) i}, entry(1_000 + i));
            t.put(1, new byte[]{100}, entry(-1));
        }
        try (Varve store = Varve.open(config())) { // the crash: entries destroyed, the index not yet
            store.table(SegmentTables.ENTRIES, TableOptions.callerPlaced(SEGMENTS)).partition(1).destroy();
        }
        try (SegmentTables t = new SegmentTables(config(), FileIOFactory.standard(), SEGMENTS)) {
            assertEquals(0, t.size(1, 5_000), "no entry is left in the segment");
            assertEquals(0, t.purge(1, 5_000).size(), "nothing to hand back: the entries are gone");
            t.put(1, new byte[]{1}, entry(9_000));
            assertEquals(1, t.size(1, 5_000));
            assertEquals(1, t.purge(1, 10_000).size(), "a new entry of a key the index named before is purged as usual");
            assertEquals(0, t.size(1, 10_000));
        }
    }
}
