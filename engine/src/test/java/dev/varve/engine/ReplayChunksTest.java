package dev.varve.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Replay by partition copies each operation's key and value out of the WAL into a chunk it hands to a worker, and reuses
 * chunks once applied ({@link ReplayWorkers}). A crashed store whose WAL holds batches of puts of every value size —
 * empty, small, past a chunk's kept bytes, the largest allowed — and removes, over several partitions and thousands of
 * reused chunks, reopens with every key holding exactly what its last operation left, and with the head-room each
 * record reserved all returned (a record of several operations returns it once the last of them is applied, by
 * whichever worker): the region is small enough that the reader waits for it again and again.
 */
@Timeout(120)
class ReplayChunksTest {
    private static final int BATCHES = 4_000;

    @TempDir
    Path dir;

    private VarveConfig config() {
        return VarveConfig.builder().path(dir).recoveryThreads(2).partitions(4).dataRegionSize(256L << 20).checkpointBufferSize(8L << 20)
                .walSyncMode(WalSyncMode.LOG_ONLY).checkpointFrequency(Duration.ofHours(1))
                .captureBufferSize(1L << 20).walSegmentSize(16L << 20).build();
    }

    /** A value's size: mostly small, some that fill a chunk in a few operations, a few past its kept bytes or the largest allowed. */
    private static int valueSize(Random random) {
        int roll = random.nextInt(1000);
        if (roll < 2) return 1 << 20;
        if (roll < 10) return 300 << 10;
        if (roll < 40) return 100 << 10;
        if (roll < 100) return 0;
        return 1 + random.nextInt(300);
    }

    @Test
    void everyOperationOfACrashedStoreIsReplayedWithItsOwnBytes() {
        Assumptions.assumeTrue(ReplayWorkers.count(2) >= 2, "one core: replay never starts workers");
        Random random = new Random(42);
        Map<String, byte[]> model = new TreeMap<>();
        Varve crashed = Varve.open(config());
        crashed.table("t");
        for (int b = 0; b < BATCHES; b++) {
            List<String> keys = new ArrayList<>();
            List<byte[]> values = new ArrayList<>();
            for (int op = 1 + random.nextInt(8); op > 0; op--) {
                String key = "k" + random.nextInt(3_000) + "x".repeat(random.nextInt(40));
                keys.add(key);
                if (random.nextInt(5) == 0) {
                    values.add(null); // a remove, of a key there or not
                } else {
                    byte[] value = new byte[valueSize(random)];
                    random.nextBytes(value);
                    values.add(value);
                }
            }
            crashed.write(w -> {
                for (int i = 0; i < keys.size(); i++) {
                    if (values.get(i) == null) w.remove("t", utf8(keys.get(i)));
                    else w.put("t", utf8(keys.get(i)), values.get(i));
                }
            });
            for (int i = 0; i < keys.size(); i++) {
                if (values.get(i) == null) model.remove(keys.get(i));
                else model.put(keys.get(i), values.get(i));
            }
        }
        crashed.halt(); // kill -9: nothing was checkpointed, every batch is replayed
        try (Varve reopened = Varve.open(config())) {
            assertTrue(reopened.recoveryReport().replayedRecords() >= BATCHES, "the crash left every batch to replay");
            assertEquals(2, reopened.engine().replayWorkers, "replayed by the workers");
            assertEquals(0, reopened.engine().memory.reservedHeadroom(), "every record's head-room came back once it was applied");
            Table t = reopened.table("t");
            for (int k = 0; k < 3_000; k++) {
                for (int pad = 0; pad < 40; pad++) {
                    String key = "k" + k + "x".repeat(pad);
                    byte[] expected = model.get(key);
                    if (expected == null) assertNull(t.get(utf8(key)), key);
                    else assertArrayEquals(expected, t.get(utf8(key)), key);
                }
            }
        }
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
