package dev.varve.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.core.util.RefusedThreads;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.Isolated;

/**
 * Opening a crashed store when the OS refuses the replay workers' threads ({@code OutOfMemoryError: unable to create
 * native thread}, a process or cgroup thread limit): the opening thread replays alone and the store opens whole, and
 * the worker that had started does not stay behind. Before, the error failed the open — under that limit the store
 * could not be opened at all — and every retry left the workers started before it waiting forever.
 */
@Timeout(120)
@Isolated("swaps the thread factory every store's replay uses")
class ReplayThreadRefusedTest {
    @TempDir
    Path dir;

    private VarveConfig config() {
        return VarveConfig.builder().path(dir).recoveryThreads(4).partitions(4).dataRegionSize(16L << 20).checkpointBufferSize(1L << 20)
                .walSyncMode(WalSyncMode.LOG_ONLY).checkpointFrequency(Duration.ofHours(1))
                .captureBufferSize(1L << 20).walSegmentSize(4L << 20).build();
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static long replayThreadsAlive() {
        return Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().startsWith("varve-replay-") && t.isAlive()).count();
    }

    @Test
    void aCrashedStoreOpensWholeWhenTheReplayThreadsAreRefused() {
        Assumptions.assumeTrue(ReplayWorkers.count(4) >= 2, "one core: replay never starts workers");
        Varve crashed = Varve.open(config());
        Table t = crashed.table("t");
        for (int i = 0; i < 3000; i++) t.put(bytes("k" + i), bytes("v" + i));
        crashed.halt(); // kill -9: every write is in the WAL alone
        long before = replayThreadsAlive();
        ReplayWorkers.threads = RefusedThreads.after(1);
        try (Varve reopened = open()) {
            assertTrue(reopened.recoveryReport().replayedRecords() > 0, "the crash left records to replay");
            assertEquals(0, reopened.engine().replayWorkers, "the opening thread replayed alone");
            Table r = reopened.table("t");
            for (int i = 0; i < 3000; i++) assertArrayEquals(bytes("v" + i), r.get(bytes("k" + i)), "k" + i);
        } finally {
            ReplayWorkers.threads = Thread::new;
        }
        assertEquals(before, replayThreadsAlive(), "the replay worker that had started is gone");
    }

    private Varve open() {
        try {
            return Varve.open(config());
        } catch (OutOfMemoryError e) { // JUnit would abort the test JVM on it
            throw new AssertionError("the open failed because a replay thread could not be started: " + e);
        }
    }
}
