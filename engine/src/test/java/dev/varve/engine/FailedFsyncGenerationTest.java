package dev.varve.engine;

import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.ForwardingFileIO;
import dev.varve.core.io.ForwardingFileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * A checkpoint whose page-file fsync fails, retried by the restore at the next open without a reboot in between: the
 * page cache still shows what the failed checkpoint wrote (Linux marks the pages clean after a writeback error, the
 * "fsyncgate" behaviour), but the disk may never get it. The restore writes every page of the checkpoint again, so the
 * data reaches the disk; it must write the generation it stamps again too, not trust the stamp it reads back, or the
 * end marker lists a generation the disk does not hold and the store is refused as rolled back after the reboot.
 */
@Timeout(120)
class FailedFsyncGenerationTest {
    /** The operating system's page: a write anywhere in it dirties (and a writeback error drops) all of it. */
    private static final int OS_PAGE = 4096;

    @TempDir
    Path tmp;

    @Test
    void aRestoreAfterAFailedFsyncWritesItsGenerationAgain() throws Exception {
        Path dir = tmp.resolve("store");
        VarveConfig cfg = FixtureSupport.small(dir).partitions(1).recoveryMode(RecoveryMode.CHECKPOINT_RECOVERY_FILE).build();
        CleanAfterError io = new CleanAfterError();
        Varve store = Varve.open(cfg, io);
        PageFileGenerationTest.fill(store, 0, 400);
        store.checkpoint().get(30, TimeUnit.SECONDS);
        PageFileGenerationTest.fill(store, 400, 800);
        io.failNextPageForce = true;
        assertThrows(ExecutionException.class, () -> store.checkpoint().get(30, TimeUnit.SECONDS));
        store.halt();
        assertEquals(1, io.lost.size(), "the failed fsync dropped the first OS page of one page file: its generation stamp");

        // no reboot: the restore at this open reads what the page cache shows, and completes the checkpoint
        try (Varve restored = Varve.open(cfg, io)) {
            PageFileGenerationTest.assertHolds(restored, 800);
        }
        io.reboot(); // the disk shows only what reached it
        try (Varve again = Varve.open(cfg)) {
            PageFileGenerationTest.assertHolds(again, 800);
        }
    }

    /**
     * The real file system, but for page files' first OS page (the header page: the generation slots): a write to it
     * is remembered with what it replaced until an fsync of the file succeeds; when that fsync fails instead, the write
     * stays visible to reads yet is lost to the disk ({@link #reboot} puts the replaced bytes back) unless a later
     * write dirties that OS page again.
     */
    private static final class CleanAfterError extends ForwardingFileIOFactory {
        volatile boolean failNextPageForce;
        /** Per write: the file, where, and the bytes it replaced. */
        private record Undo(Path file, long at, byte[] before) {
        }

        private final List<Undo> pending = new ArrayList<>();
        final List<Undo> lost = new ArrayList<>();

        @Override
        public FileIO open(Path file, boolean create) throws IOException {
            FileIO f = delegate.open(file, create);
            if (!file.getFileName().toString().endsWith(".page")) return f;
            return new ForwardingFileIO(f) {
                @Override
                public void write(ByteBuffer src, long position) throws IOException {
                    if (position < OS_PAGE) {
                        byte[] before = new byte[src.remaining()];
                        int n = Math.max(0, delegate.read(ByteBuffer.wrap(before), position));
                        synchronized (CleanAfterError.this) {
                            lost.removeIf(u -> u.file.equals(file)); // dirtied again: the next writeback carries it
                            pending.add(new Undo(file, position, java.util.Arrays.copyOf(before, n)));
                        }
                    }
                    delegate.write(src, position);
                }

                @Override
                public void force() throws IOException {
                    forced();
                    delegate.force();
                }

                @Override
                public void forceData() throws IOException {
                    forced();
                    delegate.forceData();
                }

                private void forced() throws IOException {
                    synchronized (CleanAfterError.this) {
                        List<Undo> mine = pending.stream().filter(u -> u.file.equals(file)).toList();
                        pending.removeAll(mine);
                        if (failNextPageForce) {
                            failNextPageForce = false;
                            lost.addAll(mine);
                            throw new IOException("injected: writeback of the page file failed");
                        }
                    }
                }
            };
        }

        /** The machine restarts: what a failed fsync dropped was never on the disk. */
        synchronized void reboot() throws IOException {
            for (int i = lost.size() - 1; i >= 0; i--) {
                Undo u = lost.get(i);
                try (FileIO f = delegate.open(u.file, false)) {
                    f.write(ByteBuffer.wrap(u.before), u.at);
                    f.force();
                }
            }
            lost.clear();
        }
    }
}
