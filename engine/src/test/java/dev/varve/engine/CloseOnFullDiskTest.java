package dev.varve.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.VarveConfig;
import dev.varve.core.io.StorageException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The disk fills just before close: the shutdown checkpoint fails on the snapshot archive, and closing the archive
 * then fails too. close() must report the checkpoint's failure — the root cause — not let the archive's close
 * failure replace it (it did: the caller saw only "snapshot log append failed"), and must release the store.
 */
@Timeout(60)
class CloseOnFullDiskTest {
    @TempDir
    Path dir;

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void closeReportsTheFailedShutdownCheckpointWithTheCloseFailuresSuppressed() {
        VarveConfig cfg = VarveConfig.builder().path(dir).dataRegionSize(8L << 20).checkpointFrequency(Duration.ofHours(1))
                .checkpointBufferSize(4L << 20).captureBufferSize(1L << 20).walSegmentSize(4L << 20).build();
        AtomicBoolean full = new AtomicBoolean();
        Path archive = cfg.archivePath();
        HookedFileIOFactory io = new HookedFileIOFactory((op, file) -> {
            if (full.get() && op == HookedFileIOFactory.Op.WRITE && file.startsWith(archive)) throw new IOException("No space left on device");
        });
        Varve store = Varve.open(cfg, io);
        Table t = store.table("t");
        for (int i = 0; i < 500; i++) t.put(b("k" + i), b("v" + i));
        store.snapshotNow();
        for (int i = 0; i < 500; i++) t.put(b("k" + i), b("w" + i)); // pre-states the shutdown checkpoint must archive
        full.set(true);
        StorageException e = assertThrows(StorageException.class, store::close);
        assertTrue(Arrays.stream(e.getStackTrace()).anyMatch(f -> f.getClassName().endsWith(".Checkpointer")),
                "the shutdown checkpoint's failure is the one reported: " + e);
        full.set(false);
        try (Varve reopened = Varve.open(cfg)) { // close released the directory; recovery brings back every write
            for (int i = 0; i < 500; i++) assertArrayEquals(b("w" + i), reopened.table("t").get(b("k" + i)));
        }
    }
}
