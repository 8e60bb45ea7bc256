package dev.varve.checkpoint;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.varve.core.io.StorageException;
import dev.varve.core.util.RefusedThreads;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
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
            try (CheckpointPool pool = new CheckpointPool(4, true, RefusedThreads.after(allowed))) {
                run(pool, List.of(0, 1, 2, 3), (i, slice) -> written.add(slice));
                assertEquals(Set.of(0, 1, 2, 3), written, allowed + " thread(s) started");
            }
        }
    }

    @Test
    void aSliceWrittenOnTheCheckpointersThreadStillReportsItsFailure() {
        try (CheckpointPool pool = new CheckpointPool(2, true, RefusedThreads.after(0))) {
            StorageException failed = new StorageException("no space left on device", (java.nio.file.Path) null);
            assertEquals(failed, assertThrows(StorageException.class, () -> run(pool, List.of(0, 1), (i, slice) -> {
                if (slice == 1) throw failed;
            })));
        }
    }
}
