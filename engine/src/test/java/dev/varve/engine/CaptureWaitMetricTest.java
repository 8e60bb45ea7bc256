package dev.varve.engine;

import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.core.agent.Agents;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A writer that finds the snapshot capture buffer full waits for the archiver, and {@code metrics().throttledNanos()}
 * counts that wait whole. With the agents stepped by hand the writer's wait runs the archiver's step itself, and the
 * archive's disk is made slow: the step, all of it inside the wait, used to go uncounted (the clock started after it).
 */
@Timeout(120)
class CaptureWaitMetricTest {
    private static final long SLOW_WRITE_MILLIS = 300;
    @TempDir
    Path dir;

    @Test
    void theWaitForRoomInTheCaptureBufferIsCountedWhole() {
        AtomicBoolean slow = new AtomicBoolean();
        AtomicInteger slowWrites = new AtomicInteger();
        HookedFileIOFactory io = new HookedFileIOFactory((op, file) -> {
            if (slow.get() && op == HookedFileIOFactory.Op.WRITE && file.getFileName().toString().startsWith("pagelog-")) {
                slowWrites.incrementAndGet();
                try {
                    Thread.sleep(SLOW_WRITE_MILLIS); // a slow archive disk
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        Agents agents = Agents.invoked();
        try (Varve store = Varve.open(FixtureSupport.small(dir).captureBufferSize(256L << 10).build(), io, agents)) {
            Table t = store.table("t");
            for (int k = 0; k < 3000; k++) t.put(utf8(String.format("k%05d", k)), new byte[200]); // some hundred pages
            store.snapshotNow();
            long before = store.metrics().throttledNanos();
            slow.set(true);
            // every page's first change captures its pre-state: past the buffer's 64 slots the writer waits for the archiver
            for (int k = 0; k < 3000; k++) t.put(utf8(String.format("k%05d", k)), new byte[201]);
            slow.set(false);
            assertTrue(slowWrites.get() > 0, "the writer waited for the archiver, which wrote its captures");
            long waited = store.metrics().throttledNanos() - before;
            assertTrue(waited >= TimeUnit.MILLISECONDS.toNanos(SLOW_WRITE_MILLIS) * slowWrites.get(),
                    "the writer waited through " + slowWrites.get() + " archive writes of " + SLOW_WRITE_MILLIS + " ms each, but "
                            + TimeUnit.NANOSECONDS.toMillis(waited) + " ms were counted");
        }
    }
}
