package dev.varve.engine;

import dev.varve.config.RecoveryMode;
import dev.varve.core.agent.Agents;
import dev.varve.core.io.FileIOFactory;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An idle store checkpoints nothing. A checkpoint that wrote pages leaves its witness ({@code CHECKPOINT_STARTED}) in
 * the WAL past its own mark; a checkpoint due after it with no page dirty and no other record appended runs none —
 * it used to write two markers and fsync them once after every checkpoint with pages, only to move the mark past that
 * witness. Anything else appended (a declaration) still gets its checkpoint, and the store reopens with nothing to
 * replay. Agents are stepped by hand, so every checkpoint runs exactly when the test asks for one.
 */
@Timeout(120)
class IdleCheckpointTest {
    @TempDir
    Path dir;

    @ParameterizedTest
    @EnumSource(RecoveryMode.class)
    void aCheckpointWithNothingButTheLastOnesWitnessPastItsMarkRunsNone(RecoveryMode mode) throws IOException {
        Agents agents = Agents.invoked();
        var config = FixtureSupport.small(dir).recoveryMode(mode).build();
        try (Varve store = Varve.open(config, FileIOFactory.standard(), agents)) {
            Table t = store.table("t");
            for (int k = 0; k < 300; k++) t.put(utf8("k" + k), utf8("v" + k));
            CheckpointStats written = checkpoint(store, agents);
            assertTrue(written.pages() > 0, "the first checkpoint writes the pages: " + written);
            long completed = store.metrics().checkpointsCompleted();
            Map<String, Long> markers = markers();

            CheckpointStats idle = checkpoint(store, agents);
            assertEquals(written.id(), idle.id(), "no checkpoint ran on an idle store: " + idle);
            assertEquals(completed, store.metrics().checkpointsCompleted());
            assertEquals(markers, markers(), "nor wrote a marker");
            assertEquals(written.id(), checkpoint(store, agents).id(), "nor does the one after it");

            store.snapshotNow(); // a record past the mark, no page dirty: checkpointed, not taken for the witness
            CheckpointStats declared = checkpoint(store, agents);
            assertNotEquals(written.id(), declared.id(), "a declaration past the mark gets its checkpoint");
            assertEquals(0, declared.pages());
            assertEquals(declared.id(), checkpoint(store, agents).id(), "and the store is idle again after it");

            t.put(utf8("k7"), utf8("changed"));
            CheckpointStats changed = checkpoint(store, agents);
            assertTrue(changed.id() > declared.id() && changed.pages() > 0, "a change is checkpointed as always: " + changed);
        }
        try (Varve store = Varve.open(config)) {
            assertEquals(0, store.recoveryReport().replayedRecords(), "a store closed after its witness alone replays nothing");
            assertArrayEquals(utf8("changed"), store.table("t").get(utf8("k7")));
            assertArrayEquals(utf8("v299"), store.table("t").get(utf8("k299")));
        }
    }

    private static CheckpointStats checkpoint(Varve store, Agents agents) {
        var requested = store.checkpoint();
        agents.invoker("checkpointer").invoke();
        return requested.join();
    }

    /** The checkpoint markers on disk, by name, with their sizes. */
    private Map<String, Long> markers() throws IOException {
        Map<String, Long> m = new TreeMap<>();
        try (Stream<Path> files = Files.list(dir.resolve("checkpoints"))) {
            for (Path f : (Iterable<Path>) files::iterator) m.put(f.getFileName().toString(), Files.size(f));
        }
        return m;
    }
}
