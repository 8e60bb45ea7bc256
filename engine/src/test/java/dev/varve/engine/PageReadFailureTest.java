package dev.varve.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.VarveConfig;
import dev.varve.core.io.StorageException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * An IO error reading a page file stops that file. The error names the file and the offset; a later write to that
 * partition is refused before its record reaches the WAL, so the store stays writable elsewhere and the refused write
 * does not come back at the next open (it used to be logged, fail in its apply, poison the whole store, and be
 * replayed at the reopen although the caller was told it failed).
 */
@Timeout(60)
class PageReadFailureTest {
    @TempDir
    Path dir;

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void aPartitionWhoseReadFailedRefusesWritesBeforeLoggingThem() throws Exception {
        VarveConfig cfg = VarveConfig.builder().path(dir).dataRegionSize(8L << 20)
                .checkpointBufferSize(4L << 20).captureBufferSize(1L << 20).walSegmentSize(4L << 20).build();
        try (Varve store = Varve.open(cfg)) {
            Table t = store.table("grid", TableOptions.callerPlaced(2));
            t.partition(0).put(b("a"), b("a1"));
            t.partition(1).put(b("b"), b("b1"));
            for (int i = 0; i < 200; i++) t.partition(1).put(b("c" + i), new byte[1000]); // leaves below the root
        }
        AtomicBoolean failing = new AtomicBoolean();
        Path victim = dir.resolve("pages");
        HookedFileIOFactory io = new HookedFileIOFactory((op, file) -> {
            if (failing.get() && op == HookedFileIOFactory.Op.READ && file.startsWith(victim) && file.getFileName().toString().endsWith("-p00001.page"))
                throw new IOException("Input/output error");
        });
        try (Varve store = Varve.open(cfg, io)) { // closed cleanly: nothing replayed, a leaf is read on first use
            Table t = store.table("grid", TableOptions.callerPlaced(2));
            failing.set(true);
            StorageException read = assertThrows(StorageException.class, () -> t.partition(1).get(b("b")));
            assertTrue(read.getMessage().contains("-p00001.page") && read.getMessage().contains("offset"), read.getMessage());
            failing.set(false);
            StorageException write = assertThrows(StorageException.class, () -> t.partition(1).put(b("b"), b("b2")));
            assertTrue(write.getMessage().contains("Input/output error"), write.getMessage());
            t.partition(0).put(b("a"), b("a2")); // the other partition's file is sound: the store still takes writes
        }
        try (Varve store = Varve.open(cfg)) {
            Table t = store.table("grid", TableOptions.callerPlaced(2));
            assertArrayEquals(b("b1"), t.partition(1).get(b("b")), "the refused write is not replayed");
            assertArrayEquals(b("a2"), t.partition(0).get(b("a")));
        }
    }
}
