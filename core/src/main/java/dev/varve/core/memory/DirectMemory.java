package dev.varve.core.memory;

import javax.management.JMException;
import javax.management.ObjectName;
import javax.management.openmbean.CompositeData;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntFunction;
import java.util.function.LongSupplier;

/**
 * The JVM's direct memory as {@code java.nio} counts it — its limit and what is reserved — and the allocator that grows
 * a store's memory ({@link GrowingRegion}) only while {@value #RESERVE_BYTES} bytes of it stay free (an eighth of it in a
 * JVM of less than 512 MiB of direct memory, whose stores the open admitted at that size). Growth that took
 * the JVM's direct memory to its last byte would starve what the store allocates as it goes (a checkpoint thread's
 * recovery-file and write buffers, the archive's read caches, the JDK's own buffers for heap-buffer IO) and the
 * other libraries of the JVM: a checkpoint that could not get its megabyte failed, and the store refused every
 * checkpoint after it. The reserve is the room the sizing guidance (docs/operations.md, Memory) sets aside for those.
 */
public final class DirectMemory {
    /** Direct memory that growth leaves free: the IO buffers' share of the sizing guidance (see {@link #reserveOf}). */
    public static final long RESERVE_BYTES = 64L << 20;
    /** How long a refused growth waits for the buffers of closed stores to be collected before it gives up. */
    private static final long COLLECTION_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(500);

    private DirectMemory() {
    }

    /**
     * The JVM's limit on direct memory: {@code -XX:MaxDirectMemorySize}, or the maximum heap when it is not set (0),
     * as the JDK takes it; 0 when the JVM does not say. Fixed for the JVM's life, so asked once (every open and every
     * piece a store grows by reads it).
     */
    public static long limit() {
        return Limit.BYTES;
    }

    /** The limit, asked on first use through the platform MBean server, so no module beyond {@code java.management} is needed. */
    private static final class Limit {
        static final long BYTES = ask();

        private static long ask() {
            try {
                Object option = ManagementFactory.getPlatformMBeanServer().invoke(new ObjectName("com.sun.management:type=HotSpotDiagnostic"),
                        "getVMOption", new Object[] {"MaxDirectMemorySize"}, new String[] {String.class.getName()});
                long set = Long.parseLong(String.valueOf(((CompositeData) option).get("value")));
                return set > 0 ? set : Runtime.getRuntime().maxMemory();
            } catch (JMException | RuntimeException notSaid) {
                return 0;
            }
        }
    }

    /** Direct memory the JVM has reserved now, its buffers not yet collected included (what it checks its limit against). */
    static long reserved() {
        for (BufferPoolMXBean pool : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
            if (pool.getName().equals("direct")) return pool.getTotalCapacity();
        }
        return 0;
    }

    /** {@code allocateDirect}, refusing growth into the JVM's last {@link #RESERVE_BYTES} (see {@link #keepingReserve}). */
    static IntFunction<ByteBuffer> growthAllocator() {
        return keepingReserve(DirectMemory::limit, DirectMemory::reserved, ByteBuffer::allocateDirect);
    }

    /**
     * An allocator that gives a chunk from {@code allocator} only while {@code reserved} plus the chunk stays
     * {@link #reserveOf its reserve} under the limit {@code limitSaid} gives (not checked when the JVM does not say it), and
     * otherwise throws the {@code OutOfMemoryError} a full JVM would, which stops the growth (see {@link GrowingRegion}).
     * Before refusing it asks for a collection, as the JDK does when a reservation fails, and waits a little for it:
     * buffers of closed stores count as reserved until collected.
     */
    static IntFunction<ByteBuffer> keepingReserve(LongSupplier limitSaid, LongSupplier reserved, IntFunction<ByteBuffer> allocator) {
        return bytes -> {
            long limit = limitSaid.getAsLong();
            if (limit > 0 && !fits(limit, reserved, bytes)) {
                System.gc(); // a no-op under -XX:+DisableExplicitGC, as for the JDK's own
                long start = System.nanoTime();
                while (!fits(limit, reserved, bytes)) {
                    if (System.nanoTime() - start > COLLECTION_WAIT_NANOS)
                        throw new OutOfMemoryError("growing by " + bytes + " bytes would leave less than " + reserveOf(limit) + " bytes of the JVM's "
                                + limit + " bytes of direct memory free (" + reserved.getAsLong() + " reserved) for IO buffers");
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
                }
            }
            return allocator.apply(bytes);
        };
    }

    /** The reserve under {@code limit}: {@link #RESERVE_BYTES}, or an eighth of a smaller JVM's direct memory. */
    static long reserveOf(long limit) {
        return Math.min(RESERVE_BYTES, limit / 8);
    }

    private static boolean fits(long limit, LongSupplier reserved, int bytes) {
        return reserved.getAsLong() + bytes + reserveOf(limit) <= limit;
    }
}
