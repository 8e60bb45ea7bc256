package dev.varve.server;

import dev.varve.engine.Varve;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.GlobalEventExecutor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.InetSocketAddress;
import java.util.Objects;
import java.util.Queue;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Varve on the network: one port (netty, NIO transport) serving the snapshot-shipping protocol (see
 * {@link SnapshotBackup}) and HTTP: Prometheus {@code /metrics}, JSON under {@code /api/} and the dashboard at
 * {@code /} (see {@link AdminRoutes}). The two are told apart by a connection's first bytes.
 * <pre>{@code
 * try (VarveServer server = VarveServer.start(store, new InetSocketAddress("127.0.0.1", 7070))) { ... }
 * }</pre>
 * Read-only and loopback-only unless {@link ServerOptions} say otherwise. Closing the server leaves the store open.
 */
public final class VarveServer implements AutoCloseable {
    /** Write-buffer watermarks: a connection stops taking frames above the high one (flow control of shipping). */
    static final WriteBufferWaterMark WATERMARKS = new WriteBufferWaterMark(1 << 20, 4 << 20);
    private static final Logger LOG = LoggerFactory.getLogger(VarveServer.class);
    private static final long REFUSAL_LOG_NANOS = TimeUnit.MINUTES.toNanos(1);

    /** What every connection's handlers share. */
    static final class Shared {
        final Varve store;
        final ServerOptions options;
        final AdminRoutes routes;
        final ExecutorService adminThreads;
        final ExecutorService shipThreads;
        final ShipCounters shipCounters;
        final HostCheck hostCheck;

        Shared(Varve store, ServerOptions options, AdminRoutes routes, ExecutorService adminThreads, ExecutorService shipThreads,
                ShipCounters shipCounters) {
            this.store = store;
            this.options = options;
            this.routes = routes;
            this.shipCounters = shipCounters;
            this.hostCheck = new HostCheck(options.allowedHosts());
            this.adminThreads = adminThreads;
            this.shipThreads = shipThreads;
        }
    }

    private final EventLoopGroup boss;
    private final EventLoopGroup workers;
    private final Shared shared;
    private final MetricsSampler sampler;
    private final Channel channel;
    /** Connections open now: past {@link ServerOptions#maxConnections}, new ones are closed on accept. */
    private final AtomicInteger connections = new AtomicInteger();
    /** The shipping threads made and not seen ended, so {@link #close} can wait until none is left (they read the store). */
    private final Queue<Thread> shipThreadsMade = new ConcurrentLinkedQueue<>();
    /**
     * Every accepted connection, so {@link #close} closes them itself while the event loops still run: left to the
     * loops' shutdown, a connection registered in the same run as the shutdown stayed open with no loop to serve or
     * close it (its peer waited out its idle timeout; its shipping thread's writes and close were rejected).
     */
    private final ChannelGroup children = new DefaultChannelGroup("varve-server-connections", GlobalEventExecutor.INSTANCE);
    /** When a refused connection was last logged (nanoTime), so a flood logs a line a minute, not one per connection. */
    private final AtomicLong lastRefusalLogged = new AtomicLong(System.nanoTime() - REFUSAL_LOG_NANOS);

    private VarveServer(Varve store, InetSocketAddress address, ServerOptions options) {
        this.sampler = new MetricsSampler(store, options);
        AtomicInteger shipThreadNo = new AtomicInteger();
        ExecutorService shipThreads = new ThreadPoolExecutor(0, options.maxTransfers(), 30, TimeUnit.SECONDS, new SynchronousQueue<>(), r -> {
            Thread t = new Thread(r, "varve-server-ship-" + shipThreadNo.incrementAndGet());
            t.setDaemon(true);
            // idle ones end after 30 s: the ended are dropped here (not by each thread as it ends, which it did while
            // still alive, so close() did not wait for it), and never one the pool made but has not started yet
            shipThreadsMade.removeIf(made -> made.getState() == Thread.State.TERMINATED);
            shipThreadsMade.add(t);
            return t;
        });
        ShipCounters shipCounters = new ShipCounters();
        this.shared = new Shared(store, options, new AdminRoutes(store, sampler, shipCounters, options.allowWrites()), adminThreads(), shipThreads,
                shipCounters);
        this.boss = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        this.workers = new MultiThreadIoEventLoopGroup(2, NioIoHandler.newFactory());
        try {
            this.channel = new ServerBootstrap().group(boss, workers).channel(NioServerSocketChannel.class)
                    .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, WATERMARKS)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            if (connections.incrementAndGet() > options.maxConnections()) {
                                connections.decrementAndGet();
                                ch.close(); // nothing read or sent: the peer sees the connection closed
                                warnRefused(ch, options.maxConnections());
                                return;
                            }
                            ch.closeFuture().addListener(f -> connections.decrementAndGet());
                            children.add(ch);
                            ProtocolSniffer.install(ch.pipeline(), shared);
                        }
                    })
                    .bind(address).syncUninterruptibly().channel();
        } catch (Exception e) { // a BindException among them: syncUninterruptibly rethrows it though it is checked
            shutdown(); // the event loops' threads are not daemons: left running, they would keep the JVM alive
            throw new IllegalStateException("cannot bind " + address.getHostString() + ":" + address.getPort() + ": " + e.getMessage(), e);
        }
    }

    private void warnRefused(SocketChannel ch, int max) {
        long now = System.nanoTime();
        long last = lastRefusalLogged.get();
        if (now - last >= REFUSAL_LOG_NANOS && lastRefusalLogged.compareAndSet(last, now))
            LOG.warn("closed a connection from {}: {} connections are open (maxConnections); more are closed until some end", ch.remoteAddress(), max);
    }

    /** Two threads answer HTTP requests (routes may read pages); a backlog of more than 256 requests gets 503. */
    private static ExecutorService adminThreads() {
        AtomicInteger no = new AtomicInteger();
        return new ThreadPoolExecutor(2, 2, 0, TimeUnit.SECONDS, new ArrayBlockingQueue<>(256), r -> {
            Thread t = new Thread(r, "varve-server-admin-" + no.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
    }

    /** Starts a read-only server for {@code store} on {@code address} (a loopback address) with default options. */
    public static VarveServer start(Varve store, InetSocketAddress address) {
        return start(store, address, new ServerOptions());
    }

    /**
     * Starts a server for {@code store} on {@code address}; port 0 picks a free port (see {@link #address()}).
     *
     * @throws IllegalArgumentException if the address is unresolved, or not a loopback address while the options do
     *         not allow that, or the options allow writes and the store was opened read-only
     * @throws IllegalStateException if the store is closed, or the address cannot be bound (in use, not an address of
     *         this host), naming it
     */
    public static VarveServer start(Varve store, InetSocketAddress address, ServerOptions options) {
        Objects.requireNonNull(store, "store");
        Objects.requireNonNull(address, "address");
        Objects.requireNonNull(options, "options");
        if (address.isUnresolved()) throw new IllegalArgumentException("address " + address + " is unresolved");
        if (!address.getAddress().isLoopbackAddress() && !options.allowNonLoopback())
            throw new IllegalArgumentException("address " + address + " is not a loopback address; allow it with ServerOptions.allowNonLoopback(true)");
        // fails now, not on the first request, if the store is closed (metrics() answers on a closed store)
        store.tables();
        if (options.allowWrites() && store.isReadOnly()) // each POST and follow would fail inside, as an internal error
            throw new IllegalArgumentException("writes are allowed but the store " + store.config().path() + " is open read-only: serve it read-only,"
                    + " or open it for writing");
        return new VarveServer(store, address, options);
    }

    /** The address the server listens on. */
    public InetSocketAddress address() {
        return (InetSocketAddress) channel.localAddress();
    }

    /**
     * Stops listening, closes every connection (cutting running transfers: their receivers see the connection
     * closed), waits for the shipping threads to stop reading the store, and stops the sampler. Idempotent. Once it
     * returns the server no longer touches the store, which may be closed.
     */
    @Override
    public void close() {
        channel.close().syncUninterruptibly();
        shutdown();
    }

    private void shutdown() {
        sampler.close();
        boss.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
        // the boss accepted its last connections and handed them to the workers: wait for their registration tasks
        // (queued before these no-ops), then close every connection while the workers still run to do it
        for (EventExecutor loop : workers) loop.submit(() -> { }).syncUninterruptibly();
        children.close().awaitUninterruptibly();
        shared.shipThreads.shutdownNow(); // a thread waiting for its queue or for writability ends now
        shared.adminThreads.shutdownNow();
        // the workers stop last: a shipping or admin thread still finishing a write to its closed connection has the
        // write's future completed on its channel's loop, and a stopped loop rejects that with an error in the log
        awaitTermination(shared.shipThreads);
        awaitTermination(shared.adminThreads);
        for (Thread t : shipThreadsMade) { // a terminated pool's last worker may still be on its way out
            try {
                t.join(TimeUnit.SECONDS.toMillis(30));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        workers.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
    }

    /** Waits for a pool's threads: a shipping thread may be opening an image or declaring a snapshot of the store. */
    private static void awaitTermination(ExecutorService pool) {
        try {
            if (!pool.awaitTermination(30, TimeUnit.SECONDS)) LOG.warn("server threads are still running 30 s after close; not waiting longer");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
