package dev.varve.engine;

import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.MappedRegion;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;

/**
 * The real file system with a hook run before every read, write and force of a file: a test's hook fails (or holds)
 * the call it picks, as a failing disk would. Independent of core's FaultyFileIOFactory, which models crashes.
 */
final class HookedFileIOFactory implements FileIOFactory {
    enum Op { READ, WRITE, FORCE }

    interface Hook {
        /** Runs before {@code op} on {@code file}; throws to fail it. */
        void before(Op op, Path file) throws IOException;
    }

    private final FileIOFactory real = FileIOFactory.standard();
    private final Hook hook;

    HookedFileIOFactory(Hook hook) {
        this.hook = hook;
    }

    @Override
    public FileIO open(Path file, boolean create) throws IOException {
        return new Hooked(real.open(file, create));
    }

    @Override
    public boolean exists(Path file) {
        return real.exists(file);
    }

    @Override
    public void delete(Path file) throws IOException {
        real.delete(file);
    }

    @Override
    public void atomicMove(Path from, Path to) throws IOException {
        real.atomicMove(from, to);
    }

    @Override
    public List<Path> list(Path dir, String prefix) throws IOException {
        return real.list(dir, prefix);
    }

    @Override
    public void createDirectories(Path dir) throws IOException {
        real.createDirectories(dir);
    }

    private final class Hooked implements FileIO {
        private final FileIO f;

        Hooked(FileIO f) {
            this.f = f;
        }

        @Override
        public Path path() {
            return f.path();
        }

        @Override
        public int read(ByteBuffer dst, long position) throws IOException {
            hook.before(Op.READ, f.path());
            return f.read(dst, position);
        }

        @Override
        public void write(ByteBuffer src, long position) throws IOException {
            hook.before(Op.WRITE, f.path());
            f.write(src, position);
        }

        @Override
        public void force() throws IOException {
            hook.before(Op.FORCE, f.path());
            f.force();
        }

        @Override
        public void forceData() throws IOException {
            hook.before(Op.FORCE, f.path());
            f.forceData();
        }

        @Override
        public long size() throws IOException {
            return f.size();
        }

        @Override
        public void truncate(long size) throws IOException {
            f.truncate(size);
        }

        @Override
        public MappedRegion map(long position, int length) throws IOException {
            return f.map(position, length);
        }

        @Override
        public void close() throws IOException {
            f.close();
        }
    }
}
