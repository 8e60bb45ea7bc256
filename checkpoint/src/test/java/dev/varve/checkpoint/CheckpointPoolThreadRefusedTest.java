package dev.varve.checkpoint;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.varve.core.io.StorageException;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The checkpoint's page-writing threads start as the first checkpoints hand them work; when the OS refuses one
 * ({@code OutOfMemoryError: unable to create native thread}, a process or cgroup thread limit), its slice is written on
 * the checkpointer's thread. Before, the error failed the checkpoint, and a failed checkpoint stops every write of the
 * store until it is reopened.
 */
@Timeout(60)
class CheckpointPoolThreadRefusedTest {
    /** Starts {@code allowed} threads, then refuses every further one as the OS does at its thread limit. */
    private static ThreadFactory refusingAfter(int allowed) {
        AtomicInteger made = new AtomicInteger();
        return r -> {
            if (made.incrementAndGet() <= allowed) return new Thread(r);
            return new Thread(r) {
                @Override
                public synchronized void start() {
                    throw new OutOfMemoryError("unable to create native thread: possibly out of memory or process/resource limits reached");
                }
            };
        };
    }

    private static void run(CheckpointPool pool, List<Integer> slices, CheckpointPool.SliceTask<Integer> task) {
        try {
            pool.forEachIndexed(slices, task);
        } catch (OutOfMemoryError e) { // JUnit would abort the test JVM on it
            throw new AssertionError("the checkpoint failed because a thread could not be started: " + e);
        }
    }

    @Test
    void everySliceIsWrittenWhenTheOsRefusesThreads() {
        for (int allowed : new int[]{0, 1}) {
            Set<Integer> written = ConcurrentHashMap.newKeySet();
            try (CheckpointPool pool = new CheckpointPool(4, true, refusingAfter(allowed))) {
                run(pool, List.of(0, 1, 2, 3), (i, slice) -> written.add(slice));
                assertEquals(Set.of(0, 1, 2, 3), written, allowed + " thread(s) started");
            }
        }
    }

    @Test
    void aSliceWrittenOnTheCheckpointersThreadStillReportsItsFailure() {
        try (CheckpointPool pool = new CheckpointPool(2, true, refusingAfter(0))) {
            StorageException failed = new StorageException("no space left on device", (java.nio.file.Path) null);
            assertEquals(failed, assertThrows(StorageException.class, () -> run(pool, List.of(0, 1), (i, slice) -> {
                if (slice == 1) throw failed;
            })));
        }
    }
}
