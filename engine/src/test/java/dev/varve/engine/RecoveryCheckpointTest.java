package dev.varve.engine;

import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import dev.varve.core.agent.Agents;
import dev.varve.core.io.FileIOFactory;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.file.Path;

import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Open leaves the checkpoint of what replay changed to the background. Until it completes, the WAL still holds
 * every record since the last complete mark: crashes before it — with or without new writes — lose nothing, and the
 * checkpoint that finally runs protects its page writes with recovery files, in WAL_PHYSICAL mode too (the replayed
 * pages have no physical record).
 */
@Timeout(120)
class RecoveryCheckpointTest {
    private static final int KEYS = 600;

    @TempDir
    Path dir;

    private VarveConfig config(RecoveryMode mode) {
        return FixtureSupport.small(dir).recoveryMode(mode).build();
    }

    private static void write(Varve store, String round) {
        Table t = store.table("t");
        for (int k = 0; k < KEYS; k++) t.put(utf8("k" + k), utf8(round + "-" + k));
    }

    private static void assertHolds(Varve store, String round) {
        Table t = store.table("t");
        for (int k = 0; k < KEYS; k++) assertArrayEquals(utf8(round + "-" + k), t.get(utf8("k" + k)), "k" + k + " after " + round);
    }

    @ParameterizedTest
    @EnumSource(RecoveryMode.class)
    void crashesBeforeTheRecoveryCheckpointLoseNothing(RecoveryMode mode) {
        Varve first = Varve.open(config(mode));
        write(first, "checkpointed");
        first.checkpoint().join();
        write(first, "replayed");
        first.halt();

        Agents agents = Agents.invoked(); // the pending checkpoint runs only when stepped
        Varve second = Varve.open(config(mode), FileIOFactory.standard(), agents);
        assertTrue(second.recoveryReport().replayedRecords() >= KEYS, "the crash left the second round to replay");
        assertTrue(second.recoveryReport().toString().contains("left to the background"), second.recoveryReport().toString());
        assertEquals(0, second.metrics().checkpointsCompleted(), "open did not wait for a checkpoint");
        assertHolds(second, "replayed");
        write(second, "after-open");
        second.halt(); // before the recovery checkpoint ran

        Agents stepped = Agents.invoked();
        Varve third = Varve.open(config(mode), FileIOFactory.standard(), stepped);
        assertTrue(third.recoveryReport().replayedRecords() >= 2L * KEYS, "both rounds since the mark replayed again");
        assertHolds(third, "after-open");
        assertEquals(1, stepped.invoker("checkpointer").invoke(), "open requested a checkpoint");
        CheckpointStats recovered = third.metrics().lastCheckpoint();
        assertEquals("recovery", recovered.reason());
        assertTrue(recovered.pages() > 0, "it wrote the replayed pages");
        assertEquals("recovery files", recovered.recoveryData(), "replayed pages have no physical record to restore them from");
        write(third, "after-checkpoint");
        third.halt();
        try (Varve fourth = Varve.open(config(mode))) {
            assertTrue(fourth.recoveryReport().replayedRecords() < 2L * KEYS, "replay started at the recovery checkpoint's mark");
            assertHolds(fourth, "after-checkpoint");
        }
    }
}
