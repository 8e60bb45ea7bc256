package dev.varve.core.io;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.SyncFailedException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * An fsync whose channel an interrupt closes while it runs has an unknown outcome: the JDK throws the close in place
 * of the fsync's own error, and Linux reports a write-back error once per open file, so an fsync through the
 * reopened channel would succeed with the pages lost. The real factory takes such an fsync again through the file's
 * {@link FsyncWitness}, which reports the error. A disk error cannot be made here, so the witness is a stand-in that
 * fails as the real one would after one: a force must then fail, not succeed through the reopened channel. The
 * channel is closed under the forces the way users do it, by interrupting threads that read the same file.
 */
@Timeout(120)
class FsyncAfterInterruptTest {
    @TempDir
    Path dir;

    /** Witnesses that count their fsyncs and fail them as a disk error would, once told to. */
    private static final class Witnesses implements FsyncWitness.Opener {
        final AtomicInteger syncs = new AtomicInteger();
        final AtomicInteger opened = new AtomicInteger();
        final AtomicInteger failedOpens = new AtomicInteger();
        volatile boolean failing;

        @Override
        public FsyncWitness open(Path file) throws IOException {
            opened.incrementAndGet();
            FsyncWitness real;
            try {
                real = FsyncWitness.open(file);
            } catch (IOException e) {
                failedOpens.incrementAndGet();
                throw e;
            }
            return new FsyncWitness() {
                @Override
                public void sync() throws IOException {
                    syncs.incrementAndGet();
                    if (failing) throw new SyncFailedException("injected write-back error");
                    real.sync();
                }

                @Override
                public void close() throws IOException {
                    real.close();
                }
            };
        }
    }

    @Test
    void aForceWhoseChannelAnInterruptClosedReportsTheWitnessError() throws Exception {
        Witnesses witnesses = new Witnesses();
        witnesses.failing = true;
        ChannelFileIOFactory io = new ChannelFileIOFactory(witnesses);
        IOException failed = null;
        try (FileIO f = io.open(dir.resolve("file"), true)) {
            failed = forceWhileReadersAreInterrupted(f, witnesses);
        }
        assertNotNull(failed, "no force reported the error; witness fsyncs: " + witnesses.syncs.get());
        assertTrue(failed.getMessage().contains("injected write-back error"), failed.getMessage());
        assertEquals(1, witnesses.opened.get(), "one witness per file");
    }

    @Test
    void withoutAnErrorEveryForceSucceedsAndTheFileReadsBack() throws Exception {
        Witnesses witnesses = new Witnesses();
        ChannelFileIOFactory io = new ChannelFileIOFactory(witnesses);
        try (FileIO f = io.open(dir.resolve("file"), true)) {
            assertEquals(null, forceWhileReadersAreInterrupted(f, witnesses));
            ByteBuffer b = ByteBuffer.allocate(8);
            f.read(b, 0);
            assertEquals(42L, b.flip().getLong(), "what was written is read back through the reopened channel");
        }
        assertTrue(witnesses.syncs.get() > 0, "interrupts closed the channel under a force");
    }

    @Test
    void aFileDeletedBeforeItsFirstForceIsStillForced() throws Exception {
        Witnesses witnesses = new Witnesses();
        ChannelFileIOFactory io = new ChannelFileIOFactory(witnesses);
        Path path = dir.resolve("deleted");
        try (FileIO f = io.open(path, true)) {
            f.write(ByteBuffer.allocate(8).putLong(0, 42L), 0);
            java.nio.file.Files.delete(path);
            f.forceData(); // no witness can be opened by name any more; the fsync through the channel runs
            f.force();
        }
        assertTrue(witnesses.opened.get() > 0, "a witness was asked for by name");
        assertEquals(witnesses.opened.get(), witnesses.failedOpens.get(), "and the file was gone");
    }

    /**
     * Forces {@code f} (writing before each) while a reader of it is interrupted over and over, until a force failed
     * or the witness was asked often enough; returns the failure, or null.
     */
    private static IOException forceWhileReadersAreInterrupted(FileIO f, Witnesses witnesses) throws Exception {
        f.write(ByteBuffer.allocate(8).putLong(0, 42L), 0);
        AtomicBoolean stop = new AtomicBoolean();
        Thread reader = new Thread(() -> {
            ByteBuffer b = ByteBuffer.allocate(4096);
            while (!stop.get()) {
                try {
                    f.read(b.clear(), 0);
                } catch (IOException e) {
                    throw new AssertionError("a read failed", e);
                }
            }
        }, "interrupted-reader");
        Thread interrupter = new Thread(() -> {
            while (!stop.get()) {
                reader.interrupt();
                Thread.onSpinWait();
            }
        }, "interrupter");
        reader.start();
        interrupter.start();
        ByteBuffer chunk = ByteBuffer.allocate(256 * 1024);
        try {
            for (int i = 0; i < 20_000 && witnesses.syncs.get() < 20; i++) {
                f.write(chunk.clear(), 4096 + (i % 64) * (long) chunk.capacity()); // dirty pages: the fsync takes a while
                try {
                    f.forceData();
                } catch (IOException e) {
                    return e;
                }
            }
            return null;
        } finally {
            stop.set(true);
            interrupter.join();
            reader.join();
        }
    }
}
