package dev.varve.engine;

import dev.varve.core.io.FileIO;
import dev.varve.core.io.ForwardingFileIOFactory;
import dev.varve.core.io.MappedRegion;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The real file system, recording in order every fsync ("force NAME", mapped ranges included), every write to a page
 * file ("write NAME") and every rename ("rename NAME"): ordering invariants are checked against it.
 */
class FileOpLog extends ForwardingFileIOFactory {
    final List<String> ops = Collections.synchronizedList(new ArrayList<>());

    /** Index of the first op at or after {@code from} starting with {@code prefix}, or -1. */
    int first(int from, String prefix) {
        synchronized (ops) {
            for (int i = from; i < ops.size(); i++) if (ops.get(i).startsWith(prefix)) return i;
        }
        return -1;
    }

    /** Called before every write to file {@code name}: a subclass may hold the writing thread there. */
    protected void beforeWrite(String name) throws IOException {
    }

    @Override
    public FileIO open(Path file, boolean create) throws IOException {
        FileIO f = delegate.open(file, create);
        String name = file.getFileName().toString();
        return new FileIO() {
            public Path path() {
                return f.path();
            }

            public int read(ByteBuffer dst, long position) throws IOException {
                return f.read(dst, position);
            }

            public void write(ByteBuffer src, long position) throws IOException {
                beforeWrite(name);
                f.write(src, position);
                if (name.endsWith(".page")) ops.add("write " + name);
            }

            public void force() throws IOException {
                f.force();
                ops.add("force " + name);
            }

            public long size() throws IOException {
                return f.size();
            }

            public void truncate(long size) throws IOException {
                f.truncate(size);
            }

            public MappedRegion map(long position, int length) throws IOException {
                MappedRegion m = f.map(position, length);
                return new MappedRegion() {
                    public ByteBuffer buffer() {
                        return m.buffer();
                    }

                    public void force(int offset, int len) throws IOException {
                        m.force(offset, len);
                        ops.add("force " + name);
                    }
                };
            }

            public void close() throws IOException {
                f.close();
            }
        };
    }

    @Override
    public void atomicMove(Path from, Path to) throws IOException {
        delegate.atomicMove(from, to);
        ops.add("rename " + to.getFileName());
    }
}
