package dev.varve.engine;

import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.ForwardingFileIO;
import dev.varve.core.io.ForwardingFileIOFactory;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A file system with a hook run before every read, write and force of a file: a test's hook fails (or holds) the
 * call it picks, as a failing disk would. The real file system by default, independent of core's FaultyFileIOFactory,
 * which models crashes; or over that one, when a power cut is to follow the held call.
 */
final class HookedFileIOFactory extends ForwardingFileIOFactory {
    enum Op { READ, WRITE, FORCE }

    interface Hook {
        /** Runs before {@code op} on {@code file}; throws to fail it. */
        void before(Op op, Path file) throws IOException;
    }

    private final Hook hook;

    HookedFileIOFactory(Hook hook) {
        this.hook = hook;
    }

    /** The hook over another factory: core's FaultyFileIOFactory, say, whose power loss follows the held call. */
    HookedFileIOFactory(FileIOFactory delegate, Hook hook) {
        super(delegate);
        this.hook = hook;
    }

    /**
     * Once {@code hold} is set, the next page-file write (a checkpoint's) counts {@code held} down and waits for
     * {@code release}; then it goes on, or fails as a dying disk would when {@code thenFail}.
     */
    static HookedFileIOFactory holdingAPageWrite(AtomicBoolean hold, CountDownLatch held, CountDownLatch release, boolean thenFail) {
        return new HookedFileIOFactory((op, file) -> {
            if (op == Op.WRITE && file.getFileName().toString().endsWith(".page") && hold.getAndSet(false)) {
                held.countDown();
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                if (thenFail) throw new IOException("injected: the page write fails");
            }
        });
    }

    /** Whether {@code t} waits in page memory for a checkpoint-buffer slot (for the copy-on-write of a page). */
    static boolean waitsForACheckpointBufferSlot(Thread t) {
        StackTraceElement[] stack = t.getStackTrace();
        return Arrays.stream(stack).anyMatch(f -> f.getMethodName().equals("latchForChange"))
                && Arrays.stream(stack).anyMatch(f -> f.getMethodName().equals("waitOrFail"));
    }

    @Override
    public FileIO open(Path file, boolean create) throws IOException {
        return new Hooked(delegate.open(file, create));
    }

    private final class Hooked extends ForwardingFileIO {
        Hooked(FileIO f) {
            super(f);
        }

        @Override
        public int read(ByteBuffer dst, long position) throws IOException {
            hook.before(Op.READ, path());
            return delegate.read(dst, position);
        }

        @Override
        public void write(ByteBuffer src, long position) throws IOException {
            hook.before(Op.WRITE, path());
            delegate.write(src, position);
        }

        @Override
        public void force() throws IOException {
            hook.before(Op.FORCE, path());
            delegate.force();
        }

        @Override
        public void forceData() throws IOException {
            hook.before(Op.FORCE, path());
            delegate.forceData();
        }
    }
}
