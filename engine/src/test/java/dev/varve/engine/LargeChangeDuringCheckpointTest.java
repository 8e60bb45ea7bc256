package dev.varve.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A write that copies more pages than the checkpoint buffer holds while a checkpoint runs — removing or replacing a
 * 1 MiB value frees its whole overflow chain, a copy-on-write per page, under the leaf's and the partition meta page's
 * latches — completes: the checkpointer never waits for a latch such a writer holds, so the slots it waits for free.
 * (It waited 120 s for a slot and failed half-way, and a later checkpoint made the half-made tree durable.)
 */
@Timeout(60) // well under the writer's 120 s wait for a slot
class LargeChangeDuringCheckpointTest {
    @TempDir
    Path dir;

    @ParameterizedTest
    @EnumSource(RecoveryMode.class)
    void removingOrReplacingAOneMebibyteValueWhileItsCheckpointRunsCompletes(RecoveryMode mode) {
        // the smallest checkpoint buffer there is: 64 slots of 4 KiB, a quarter of a 1 MiB value's chain
        VarveConfig config = FixtureSupport.small(dir).recoveryMode(mode).partitions(1).checkpointBufferSize(256 << 10).build();
        byte[] key = "big".getBytes(StandardCharsets.UTF_8);
        byte[] last = null;
        try (Varve store = Varve.open(config)) {
            Table t = store.table("t");
            for (int round = 0; round < 6; round++) {
                byte[] value = FixtureSupport.bytes(round, Varve.MAX_VALUE_BYTES);
                t.put(key, value);
                CompletableFuture<?> running = store.checkpoint(); // writes the chain just made
                if (round % 2 == 0) {
                    t.remove(key);
                    last = null;
                } else {
                    last = FixtureSupport.bytes(round + 100, Varve.MAX_VALUE_BYTES);
                    t.put(key, last);
                }
                running.join();
            }
            check(t.get(key), last);
        }
        try (Varve store = Varve.open(config)) {
            check(store.table("t").get(key), last);
        }
    }

    private static void check(byte[] actual, byte[] expected) {
        if (expected == null) assertNull(actual);
        else assertArrayEquals(expected, actual);
    }
}
