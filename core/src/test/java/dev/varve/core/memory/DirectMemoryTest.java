package dev.varve.core.memory;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntFunction;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Growth keeps {@link DirectMemory#RESERVE_BYTES} of the JVM's direct memory free for the buffers a store allocates as
 * it goes; memory reserved by buffers not yet collected is waited for, not taken for memory in use for good.
 */
@Timeout(60)
class DirectMemoryTest {
    private static final long MIB = 1 << 20;
    private static final IntFunction<ByteBuffer> HEAP = ByteBuffer::allocate; // the check is under test, not allocateDirect

    @Test
    void growthStopsWhereItWouldEatIntoTheReserve() {
        long limit = 512 * MIB;
        AtomicLong reserved = new AtomicLong(400 * MIB);
        IntFunction<ByteBuffer> grow = DirectMemory.keepingReserve(() -> limit, reserved::get, HEAP);
        assertEquals(32 * MIB, grow.apply((int) (32 * MIB)).capacity(), "400 + 32 leaves 80 MiB free");
        reserved.set(432 * MIB);
        OutOfMemoryError refused = assertThrows(OutOfMemoryError.class, () -> grow.apply((int) (32 * MIB)));
        assertTrue(refused.getMessage().contains("would leave less than 67108864 bytes of the JVM's 536870912 bytes of direct memory free "
                + "(452984832 reserved)"), refused.getMessage());
        assertEquals(8 * MIB, grow.apply((int) (8 * MIB)).capacity(), "432 + 8 leaves the reserve whole");
    }

    @Test
    void memoryCollectedWhileGrowthWaitsIsTaken() {
        AtomicInteger asked = new AtomicInteger();
        // the first reading counts a closed store's buffers; they are collected by the third
        IntFunction<ByteBuffer> grow = DirectMemory.keepingReserve(() -> 256 * MIB, () -> asked.incrementAndGet() < 3 ? 250 * MIB : 100 * MIB, HEAP);
        assertEquals(32 * MIB, grow.apply((int) (32 * MIB)).capacity());
        assertTrue(asked.get() >= 3);
    }

    @Test
    void aSmallJvmKeepsAnEighthOfItsDirectMemory() {
        assertEquals(64 * MIB, DirectMemory.reserveOf(1024 * MIB));
        assertEquals(64 * MIB, DirectMemory.reserveOf(512 * MIB));
        assertEquals(8 * MIB, DirectMemory.reserveOf(64 * MIB), "a 48 MiB region admitted under 64 MiB still grows to 56");
        IntFunction<ByteBuffer> grow = DirectMemory.keepingReserve(() -> 64 * MIB, () -> 52 * MIB, HEAP);
        assertEquals(4 * MIB, grow.apply((int) (4 * MIB)).capacity());
    }

    @Test
    void aJvmThatDoesNotSayItsLimitIsNotChecked() {
        IntFunction<ByteBuffer> grow = DirectMemory.keepingReserve(() -> 0, () -> Long.MAX_VALUE / 2, HEAP);
        assertEquals(MIB, grow.apply((int) MIB).capacity());
    }

    /** A region growing under the reserve stops where the reserve begins, with the region's warning, and keeps what it has. */
    @Test
    void aRegionStopsGrowingAtTheReserve() {
        AtomicLong reserved = new AtomicLong(400 * MIB);
        IntFunction<ByteBuffer> grow = DirectMemory.keepingReserve(() -> 512 * MIB, reserved::get, bytes -> {
            reserved.addAndGet(bytes);
            return ByteBuffer.allocateDirect(bytes);
        });
        GrowingRegion region = new GrowingRegion(64 * 1024, 1024, "dataRegionSize", (int) MIB, ByteBuffer::allocateDirect, grow);
        for (int slot = 0; slot < 64 * 1024; slot += 1024) {
            if (slot < 49 * 1024) assertNotNull(region.bufferOf(slot), "chunk " + slot / 1024);
            else assertNull(region.bufferOf(slot), "chunk " + slot / 1024 + " would eat into the reserve");
        }
        region.awaitAllocations();
        assertEquals(49 * 1024, region.capacity(), "the first chunk, and 48 more up to 64 MiB under the limit");
    }
}
