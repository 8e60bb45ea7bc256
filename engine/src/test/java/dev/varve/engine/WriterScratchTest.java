package dev.varve.engine;

import dev.varve.config.VarveConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A writer thread does not keep a direct buffer the size of the largest batch it ever wrote. The per-thread buffer a
 * WAL record is encoded in used to grow to the largest record (to twice the previous size, up to a WAL segment) and
 * stay with the thread for its life, whatever store it wrote to and whether that store was still open: six pool
 * threads that each wrote one 9 MiB batch held 56 MiB of direct memory after the store was closed, until the threads
 * ended.
 */
@Timeout(120)
class WriterScratchTest {
    /** What a thread may keep between records: small batches and single writes, never one of megabytes. */
    private static final int KEPT_AT_MOST = 1 << 20;

    @TempDir
    Path dir;

    @Test
    void aLargeBatchLeavesNoLargeBufferWithItsThread() {
        VarveConfig config = VarveConfig.builder().path(dir).dataRegionSize(64L << 20).checkpointBufferSize(4L << 20)
                .captureBufferSize(1L << 20).walSegmentSize(16L << 20).partitions(2).build();
        byte[] big = new byte[(1 << 20) - 64];
        Arrays.fill(big, (byte) 7);
        try (Varve store = Varve.open(config)) {
            store.table("t");
            store.write(b -> {
                for (int i = 0; i < 4; i++) b.put("t", new byte[]{(byte) i}, big); // a record of about 4 MiB
            });
            int kept = LogicalRecords.scratch(1).capacity();
            assertTrue(kept <= KEPT_AT_MOST, "the writing thread keeps a " + kept + "-byte direct buffer after a 4 MiB batch");
            store.table("t").put(new byte[]{9}, new byte[]{1, 2, 3}); // small writes still go through the kept buffer
            assertArrayEquals(big, store.table("t").get(new byte[]{3}));
            assertArrayEquals(new byte[]{1, 2, 3}, store.table("t").get(new byte[]{9}));
        }
        try (Varve store = Varve.open(config)) { // the large record was written whole: it replays
            for (int i = 0; i < 4; i++) assertArrayEquals(big, store.table("t").get(new byte[]{(byte) i}));
        }
    }
}
