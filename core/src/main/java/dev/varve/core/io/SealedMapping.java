package dev.varve.core.io;

import java.io.IOException;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;

/**
 * A read-only mapping of a file's first bytes, bytes its caller knows never change again (a filled archive segment):
 * a read from it costs a copy, not a system call. An as-of read of old history walks a chain of diff entries, one
 * in each of many records, and on a cold first pass each link paid a {@code pread} of its record (1.6-2.5 µs
 * measured, about half a link's time).
 *
 * <p>Why only on Java 22 and later: a mapping must be let go of when its file is deleted (a reclaimed segment's disk
 * space) or cut. A {@code java.lang.foreign.Arena} unmaps when it closes, and a shared one makes a read racing the
 * close fail with an {@link IllegalStateException} rather than touch unmapped memory; Java 17's mapped buffers are
 * unmapped only by a garbage collection, or through the JDK's internal unsafe API, which Varve does not use. The build
 * targets Java 17, so the arena and the mapping are looked up at run time; before Java 22 nothing is mapped
 * ({@link #AVAILABLE} false) and reads go through the file. The system property {@value #PROPERTY} set to
 * {@code false} turns mapping off on any Java.
 */
final class SealedMapping {
    /** The system property that turns mapping off when {@code false}. */
    static final String PROPERTY = "varve.io.mapSealedFiles";
    private static final Handles HANDLES = Handles.lookUp();
    /** Whether files are mapped here: Java 22 or later, and not turned off. */
    static final boolean AVAILABLE = HANDLES != null && !"false".equals(System.getProperty(PROPERTY));

    /** The arena the mapping lives in: closing it unmaps. */
    private final AutoCloseable arena;
    /** The mapped bytes, read-only; position 0 is the file's start. Only absolute reads: threads share it. */
    private final ByteBuffer bytes;
    private boolean closed;

    private SealedMapping(AutoCloseable arena, ByteBuffer bytes) {
        this.arena = arena;
        this.bytes = bytes;
    }

    /** Maps the first {@code length} bytes of {@code channel} (a file at least that long) read-only. Needs {@link #AVAILABLE}. */
    static SealedMapping map(FileChannel channel, long length) throws IOException {
        if (length > Integer.MAX_VALUE) throw new IllegalArgumentException("a mapping of " + length + " bytes is more than one buffer holds");
        AutoCloseable arena = HANDLES.newArena();
        try {
            return new SealedMapping(arena, HANDLES.map(channel, length, arena));
        } catch (IOException | RuntimeException | Error e) {
            closeQuietly(arena, e);
            throw e;
        }
    }

    private static void closeQuietly(AutoCloseable arena, Throwable cause) {
        try {
            arena.close();
        } catch (Exception e) {
            cause.addSuppressed(e);
        }
    }

    /** The bytes mapped. */
    long length() {
        return bytes.capacity();
    }

    /**
     * Copies the bytes at {@code position} into {@code dst} from its position until it is full, advancing it; false,
     * having copied nothing, when they run past the mapping. A {@link ClosedChannelException} when the mapping was let
     * go of under the read.
     */
    boolean copy(ByteBuffer dst, long position) throws IOException {
        int n = dst.remaining();
        if (position < 0 || position + n > bytes.capacity()) return false;
        try {
            dst.put(dst.position(), bytes, (int) position, n);
        } catch (IllegalStateException unmapped) {
            throw new ClosedChannelException();
        } catch (InternalError fault) { // the file was cut under the mapping by someone else: the page is gone (SIGBUS)
            throw new IOException("the file is shorter than its mapping (cut while open?): " + fault.getMessage(), fault);
        }
        dst.position(dst.position() + n);
        return true;
    }

    /**
     * Unmaps. A close that finds a read under way fails on some Java versions ({@link IllegalStateException}), so it is
     * tried again: a read is a copy of a few hundred bytes.
     */
    synchronized void close() throws IOException {
        if (closed) return;
        while (true) {
            try {
                arena.close();
                closed = true;
                return;
            } catch (IllegalStateException readUnderWay) {
                Thread.onSpinWait();
            } catch (Exception e) {
                throw new IOException("cannot unmap a file: " + e.getMessage(), e);
            }
        }
    }

    /** The Java 22 methods, looked up by name: {@code Arena.ofShared}, {@code FileChannel.map} into one, {@code MemorySegment.asByteBuffer}. */
    private record Handles(MethodHandle ofShared, MethodHandle map, MethodHandle asByteBuffer) {
        /** The handles, or null before Java 22 (in 21 the API is a preview). */
        static Handles lookUp() {
            if (Runtime.version().feature() < 22) return null;
            try {
                MethodHandles.Lookup lookup = MethodHandles.publicLookup();
                Class<?> arena = Class.forName("java.lang.foreign.Arena");
                Class<?> segment = Class.forName("java.lang.foreign.MemorySegment");
                MethodHandle ofShared = lookup.findStatic(arena, "ofShared", MethodType.methodType(arena))
                        .asType(MethodType.methodType(AutoCloseable.class));
                MethodHandle map = lookup.findVirtual(FileChannel.class, "map",
                        MethodType.methodType(segment, FileChannel.MapMode.class, long.class, long.class, arena))
                        .asType(MethodType.methodType(Object.class, FileChannel.class, FileChannel.MapMode.class, long.class, long.class,
                                AutoCloseable.class));
                MethodHandle asByteBuffer = lookup.findVirtual(segment, "asByteBuffer", MethodType.methodType(ByteBuffer.class))
                        .asType(MethodType.methodType(ByteBuffer.class, Object.class));
                return new Handles(ofShared, map, asByteBuffer);
            } catch (ReflectiveOperationException | RuntimeException e) {
                return null;
            }
        }

        AutoCloseable newArena() {
            try {
                return (AutoCloseable) ofShared.invokeExact();
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }

        ByteBuffer map(FileChannel channel, long length, AutoCloseable arena) throws IOException {
            try {
                Object segment = (Object) map.invokeExact(channel, FileChannel.MapMode.READ_ONLY, 0L, length, arena);
                return (ByteBuffer) asByteBuffer.invokeExact(segment);
            } catch (IOException | RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IOException("cannot map " + length + " bytes: " + t, t);
            }
        }
    }
}
