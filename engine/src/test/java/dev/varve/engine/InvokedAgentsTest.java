package dev.varve.engine;

import dev.varve.config.VarveConfig;
import dev.varve.core.agent.Agents;
import dev.varve.core.io.FileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.Isolated;

import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;

import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The store with its background agents stepped by hand ({@link Agents#invoked}): no agent thread exists, a requested
 * checkpoint runs exactly when the test steps the checkpointer, and a checkpoint that must wait for the archiver steps
 * it on its own thread instead of waiting for one.
 */
@Timeout(120)
@Isolated("counts the threads of every store in the JVM")
class InvokedAgentsTest {
    @TempDir
    Path dir;

    private VarveConfig config() {
        return FixtureSupport.small(dir).name("stepped").build();
    }

    @Test
    void checkpointsRunExactlyWhenStepped() {
        Agents agents = Agents.invoked();
        long snapshot;
        try (Varve store = Varve.open(config(), FileIOFactory.standard(), agents)) {
            assertTrue(Thread.getAllStackTraces().keySet().stream().noneMatch(t -> t.getName().endsWith("[stepped]")),
                    "no thread runs an agent of a store stepped by hand");
            Table t = store.table("t");
            for (int k = 0; k < 500; k++) t.put(utf8("k" + k), utf8("before-" + k));
            snapshot = store.snapshotNow();
            for (int k = 0; k < 500; k++) t.put(utf8("k" + k), utf8("after-" + k)); // captures the pre-states

            long completed = store.metrics().checkpointsCompleted();
            CompletableFuture<CheckpointStats> requested = store.checkpoint();
            assertFalse(requested.isDone(), "nothing runs the checkpoint before the test steps the checkpointer");
            assertEquals(completed, store.metrics().checkpointsCompleted());

            assertEquals(1, agents.invoker("checkpointer").invoke(), "one step runs the requested checkpoint");
            assertTrue(requested.isDone());
            assertTrue(requested.join().pages() > 0, "the checkpoint wrote the changed pages");
            assertEquals(completed + 1, store.metrics().checkpointsCompleted());
            assertEquals(0, agents.invoker("checkpointer").invoke(), "nothing is due after it");

            assertEquals(0, agents.invoker("archiver").invoke(), "the checkpoint archived every capture on its own thread");
            try (SnapshotView v = store.asOf(snapshot)) {
                for (int k = 0; k < 500; k += 49) assertArrayEquals(utf8("before-" + k), v.table("t").get(utf8("k" + k)));
            }
        }
        try (Varve store = Varve.open(config())) {
            assertEquals(0, store.recoveryReport().replayedRecords(), "the checkpoint at close ran without threads too");
            for (int k = 0; k < 500; k += 49) assertArrayEquals(utf8("after-" + k), store.table("t").get(utf8("k" + k)));
            try (SnapshotView v = store.asOf(snapshot)) {
                assertArrayEquals(utf8("before-7"), v.table("t").get(utf8("k7")));
            }
        }
    }

    @Test
    void aClosedStoreFailsItsPendingRequestAndIsNotSteppedAgain() {
        Agents agents = Agents.invoked();
        CompletableFuture<CheckpointStats> pending;
        try (Varve store = Varve.open(config(), FileIOFactory.standard(), agents)) {
            store.table("t").put(utf8("k"), utf8("v"));
            pending = store.checkpoint();
        }
        assertTrue(pending.isCompletedExceptionally(), "close fails a request no step served");
        assertEquals(0, agents.invokeAll(), "closed agents do nothing");
    }
}
