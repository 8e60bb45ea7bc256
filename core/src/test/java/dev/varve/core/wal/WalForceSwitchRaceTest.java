package dev.varve.core.wal;

import static dev.varve.core.wal.WalTestSupport.SEGMENT_SIZE;
import static dev.varve.core.wal.WalTestSupport.readAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.WalSyncMode;
import dev.varve.core.io.FileIOFactory;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Forces racing segment switches, as a checkpointer's and a background flusher's forces race writers: two writers
 * switch a small segment every few appends while a third thread forces with short random pauses. Every force returns,
 * the WAL never fails, and every record reads back, before and after a reopen. The interleavings are the scheduler's,
 * so this is a coarse net under {@link WalSegmentCloserTest}, which makes the known ones happen one at a time: the force that
 * finished its own segment's switch and then wrote to the segment the switch had closed failed it, before the fix, in
 * 1 of 5 runs with 6,000 records a writer and 1 of 6 with 24,000 (the window is a thread's start inside the switch).
 */
@Timeout(120)
class WalForceSwitchRaceTest {
    private static final int RECORDS_PER_WRITER = 12_000;
    private static final int RECORD_BYTES = 1_000; // some 60 records a 64 KiB segment: a switch every 30 appends a writer

    @TempDir
    Path dir;

    @ParameterizedTest
    @EnumSource(value = WalSyncMode.class, names = {"LOG_ONLY", "BACKGROUND"})
    void forcesRacingSwitchesNeverFailTheWal(WalSyncMode mode) throws Exception {
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicBoolean writing = new AtomicBoolean(true);
        long first;
        int forces = 0;
        Duration flushEvery = mode == WalSyncMode.BACKGROUND ? Duration.ofMillis(1) : null; // its flusher forces too
        try (Wal wal = Wal.open(dir, FileIOFactory.standard(), SEGMENT_SIZE, mode, flushEvery)) {
            first = wal.position();
            Thread[] writers = new Thread[2];
            for (int w = 0; w < writers.length; w++) {
                byte tag = (byte) w;
                writers[w] = new Thread(() -> {
                    try {
                        byte[] payload = new byte[RECORD_BYTES];
                        payload[0] = tag;
                        for (int i = 0; i < RECORDS_PER_WRITER; i++) wal.append(7, ByteBuffer.wrap(payload));
                    } catch (Throwable t) {
                        failure.compareAndSet(null, t);
                    }
                }, "writer-" + w);
                writers[w].start();
            }
            Thread stopper = new Thread(() -> {
                for (Thread t : writers) {
                    try {
                        t.join();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                writing.set(false);
            });
            stopper.start();
            Random rnd = WalTestSupport.seeded("force-switch-race");
            while (writing.get() && failure.get() == null) {
                try {
                    wal.force();
                    forces++;
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                }
                // pauses of up to a few segments' appends: a force then often starts a segment or more behind, and
                // finishes a pending switch itself
                LockSupport.parkNanos(rnd.nextInt(200_000));
            }
            stopper.join();
            assertNull(failure.get(), "a force or an append beside the switches");
            assertNull(wal.failure());
            assertTrue(forces > 0);
            wal.force();
            assertEquals(2 * RECORDS_PER_WRITER, readAll(wal, first).size());
        }
        try (Wal wal = Wal.open(dir, FileIOFactory.standard(), SEGMENT_SIZE, mode, flushEvery)) {
            List<WalTestSupport.Rec> read = readAll(wal, first);
            assertEquals(2 * RECORDS_PER_WRITER, read.size(), "every record after the reopen");
        }
    }
}
