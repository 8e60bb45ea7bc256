package dev.varve.engine;

import dev.varve.checkpoint.CheckpointMarker;
import dev.varve.checkpoint.CheckpointMarkers;
import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import dev.varve.core.agent.Agents;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.spi.RecordTypes;
import dev.varve.core.tree.BPlusTree;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;

import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The store's high-water mark of value sizes: checkpoint markers record it, open resumes it from the marker recovery
 * starts at and replay raises it by each value it replays, and replay reserves for each operation the overflow chain
 * of a value that large — not of the longest value there can be — as the most a replayed operation may free.
 */
@Timeout(120)
class LargestValueTest {
    @TempDir
    Path dir;

    private VarveConfig config(RecoveryMode mode) {
        return FixtureSupport.small(dir).recoveryMode(mode).build();
    }

    private CheckpointMarkers markers() {
        return new CheckpointMarkers(FileIOFactory.standard(), dir.resolve("checkpoints"));
    }

    private static int largest(Varve store) {
        return store.engine().writePath.largestValue();
    }

    @ParameterizedTest
    @EnumSource(RecoveryMode.class)
    void markersRecordTheLargestValueGivenRemovedOnesTooAndReplayResumesAndRaisesIt(RecoveryMode mode) {
        Varve first = Varve.open(config(mode));
        Table t = first.table("t");
        t.put(utf8("big"), new byte[30_000]);
        t.put(utf8("small"), new byte[100]);
        assertTrue(t.remove(utf8("big")));
        first.checkpoint().join();
        CheckpointMarker start = markers().latestStart().orElseThrow();
        assertEquals(30_000, start.largestValue(), "a value since removed still counts: the mark never falls");
        assertEquals(30_000, markers().end(start.id()).orElseThrow().largestValue());
        t.put(utf8("tail"), new byte[5_000]); // in the WAL only
        first.halt();

        // the tail's record is smaller than the marker's value: the mark comes from the marker
        Varve second = Varve.open(config(mode), FileIOFactory.standard(), Agents.invoked());
        assertEquals(30_000, largest(second));
        assertArrayEquals(new byte[5_000], second.table("t").get(utf8("tail")));
        second.table("t").put(utf8("larger"), new byte[50_000]);
        assertEquals(50_000, largest(second), "a live put raises it");
        second.halt(); // before the recovery checkpoint ran: the marker is still the first one's

        // replay raises it by the 50,000-byte value in a record after the marker: on the opening thread alone ...
        Varve third = Varve.open(config(mode), FileIOFactory.standard(), Agents.invoked());
        assertEquals(0, third.engine().replayWorkers);
        assertEquals(50_000, largest(third));
        third.halt(); // before the recovery checkpoint again: the next open replays the same records
        // ... and with the workers, the opening thread reading the values as it hands them over
        try (Varve fourth = Varve.open(FixtureSupport.small(dir).recoveryMode(mode).recoveryThreads(2).build())) {
            assertEquals(2, fourth.engine().replayWorkers, "replayed by the workers");
            assertEquals(50_000, largest(fourth));
        }
        assertEquals(50_000, markers().latestStart().orElseThrow().largestValue(), "the checkpoints since record it");
    }

    /** A store whose markers predate the field bounds replay by the longest value there can be, and keeps recording that. */
    @Test
    void markersWithoutTheLargestValueBoundItByTheLongestValueThereCanBe() {
        Varve first = Varve.open(config(RecoveryMode.CHECKPOINT_RECOVERY_FILE));
        first.table("t").put(utf8("k"), new byte[100]);
        first.checkpoint().join();
        first.close();
        CheckpointMarkers m = markers();
        long id = m.latestStartId();
        for (CheckpointMarker old : List.of(m.start(id).orElseThrow(), m.end(id).orElseThrow())) // as a version 2 marker reads
            m.write(old.withLargestValue(CheckpointMarker.LARGEST_VALUE_UNKNOWN));
        assertEquals(CheckpointMarker.LARGEST_VALUE_UNKNOWN, m.latestStart().orElseThrow().largestValue());

        try (Varve second = Varve.open(config(RecoveryMode.CHECKPOINT_RECOVERY_FILE))) {
            assertEquals(BPlusTree.MAX_VALUE_BYTES, largest(second));
            second.table("t").put(utf8("k"), new byte[200]);
            second.checkpoint().join();
            assertEquals(BPlusTree.MAX_VALUE_BYTES, markers().latestStart().orElseThrow().largestValue());
        }
    }

    @Test
    void replayReservesPerOperationTheChainOfTheLargestValueGivenBeforeIt() {
        try (Varve store = Varve.open(config(RecoveryMode.CHECKPOINT_RECOVERY_FILE))) {
            Table t = store.table("t");
            t.put(utf8("a"), new byte[12_000]);
            Engine engine = store.engine();
            int fileId = 1 << 16; // the bound reads the operation count alone
            ByteBuffer record = LogicalRecords.encodeBatch(List.of(new LogicalRecords.Op(fileId, utf8("a"), new byte[10]),
                    new LogicalRecords.Op(fileId, utf8("b"), null), new LogicalRecords.Op(fileId, utf8("c"), new byte[10])));
            LogicalReplayer replayer = new LogicalReplayer(engine, false, new long[0]);
            int chain = BPlusTree.overflowPagesAtMost(4096, 12_000);
            assertEquals(3, chain);
            assertEquals(3L * chain, replayer.freedPagesBound(RecordTypes.DATA_BATCH, record));
            assertEquals(0, replayer.freedPagesBound(RecordTypes.SNAPSHOT, record), "only data records free chains");
            assertTrue(BPlusTree.maxOverflowPages(4096) > 250, "against the longest value's " + BPlusTree.maxOverflowPages(4096));
        }
    }
}
