package dev.varve.engine;

import dev.varve.config.RecoveryCompression;
import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.core.io.CorruptionException;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A checkpoint interrupted after its start marker is restored from its recovery files, in every compression; a
 * recovery file with a flipped byte makes open fail with the file's name rather than guess.
 */
@Timeout(300)
class RecoveryFileTest {
    @TempDir
    Path dir;

    private VarveConfig config(RecoveryCompression c) {
        return VarveConfig.builder().path(dir).dataRegionSize(16L << 20).partitions(4).recoveryMode(RecoveryMode.CHECKPOINT_RECOVERY_FILE)
                .recoveryCompression(c).walSyncMode(WalSyncMode.LOG_ONLY).checkpointFrequency(Duration.ofHours(1)).checkpointBufferSize(1L << 20)
                .captureBufferSize(1L << 20).walSegmentSize(4L << 20).build();
    }

    /** Writes, then a checkpoint that stops after its page writes, before its end marker; then a crash. */
    private void interruptedCheckpoint(RecoveryCompression c) throws Exception {
        NoEndMarker io = new NoEndMarker();
        Varve store = Varve.open(config(c), io);
        DeterministicReplayTestSupport.workload(store, 0, 2000);
        io.armed = true;
        ExecutionException e = assertThrows(ExecutionException.class, () -> store.checkpoint().get());
        assertTrue(e.getCause().getMessage().contains("end marker") || String.valueOf(e.getCause().getCause()).contains("no end marker"), e.toString());
        store.halt();
        assertFalse(recoveryFiles().isEmpty(), "the interrupted checkpoint left its recovery files");
    }

    @ParameterizedTest
    @EnumSource(RecoveryCompression.class)
    void interruptedCheckpointIsRestoredFromItsRecoveryFiles(RecoveryCompression c) throws Exception {
        interruptedCheckpoint(c);
        try (Varve store = Varve.open(config(c))) {
            assertEquals("recovery files", store.recoveryReport().restoredFrom());
            assertTrue(store.recoveryReport().restoredPages() > 0);
            assertNull(KillWorkload.diff(store, KillWorkload.model(2000)));
        }
        assertTrue(recoveryFiles().isEmpty(), "recovery files are removed once the end marker is durable");
    }

    @ParameterizedTest
    @EnumSource(RecoveryCompression.class)
    void corruptRecoveryFileIsReportedByName(RecoveryCompression c) throws Exception {
        interruptedCheckpoint(c);
        Path victim = recoveryFiles().get(0);
        long size = Files.size(victim);
        try (FileChannel ch = FileChannel.open(victim, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.allocate(1);
            long at = size / 2;
            ch.read(b, at);
            b.put(0, (byte) (b.get(0) ^ 0x5A)).rewind();
            ch.write(b, at);
        }
        CorruptionException e = assertThrows(CorruptionException.class, () -> Varve.open(config(c)).close());
        assertTrue(e.getMessage().contains(victim.getFileName().toString()), e.getMessage());
        assertEquals(victim, e.file());
    }

    private List<Path> recoveryFiles() throws IOException {
        try (Stream<Path> s = Files.list(dir.resolve("checkpoints"))) {
            return s.filter(p -> p.getFileName().toString().contains("-recovery-")).sorted().toList();
        }
    }
}
