package dev.varve.engine;

import dev.varve.config.VarveConfig;
import dev.varve.core.tree.ScanBatch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.*;

/**
 * A scan copies each partition's entries out in batches of up to 256; with values of up to 1 MiB a batch must stop
 * on its bytes too, or a table scan holds 256 MiB per partition on the heap at once (4 GiB for 16 partitions of
 * large values: an OutOfMemoryError where the docs promise an ordinary scan).
 */
@Timeout(120)
class ScanBatchBytesTest {
    static final int VALUES = 24;
    @TempDir
    Path dir;

    @Test
    void aBatchOfLargeValuesStopsOnItsBytes() {
        VarveConfig cfg = VarveConfig.builder().path(dir).dataRegionSize(64L << 20).partitions(1)
                .checkpointBufferSize(4L << 20).captureBufferSize(1L << 20).walSegmentSize(4L << 20).build();
        try (Varve store = Varve.open(cfg)) {
            Table t = store.table("blobs");
            for (int i = 0; i < VALUES; i++) {
                byte[] v = new byte[Varve.MAX_VALUE_BYTES];
                Arrays.fill(v, (byte) i);
                t.put(new byte[]{(byte) i}, v);
            }
            long snap = store.snapshotNow();
            PartitionHandle h = ((TableHandle) t).handles()[0];
            checkBatches(store.engine().scanSource(h), "live");
            try (SnapshotView v = store.asOf(snap)) {
                try (Cursor c = v.table("blobs").scan(null, null)) {
                    for (int i = 0; i < VALUES; i++) {
                        assertTrue(c.next());
                        assertEquals(i, c.key()[0]);
                        assertEquals(Varve.MAX_VALUE_BYTES, c.value().length);
                        assertEquals((byte) i, c.value()[Varve.MAX_VALUE_BYTES - 1]);
                    }
                    assertFalse(c.next());
                }
            }
        }
    }

    /** (A view's batches come from the same tree scan, over its past pages.) Every batch of a whole scan asked for 256 entries holds at most 2 MiB, and together they hold every entry once. */
    private static void checkBatches(PartitionCursor.BatchSource source, String what) {
        byte[] from = null;
        int seen = 0;
        while (true) {
            ScanBatch b = source.scan(from, from == null, null, 256);
            long bytes = 0;
            for (int i = 0; i < b.size(); i++) bytes += b.key(i).length + b.value(i).length;
            assertTrue(bytes <= 2L << 20, what + ": a batch of " + b.size() + " entries holds " + bytes + " bytes");
            for (int i = 0; i < b.size(); i++) assertEquals(seen + i, b.key(i)[0], what);
            seen += b.size();
            if (!b.hasMore()) break;
            from = b.lastKey();
        }
        assertEquals(VALUES, seen, what);
    }
}
