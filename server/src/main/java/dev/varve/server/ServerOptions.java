package dev.varve.server;

import java.time.Duration;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;

/**
 * Settings of a {@link VarveServer}, each with its default; every setter validates and names the bad field.
 * Read-only and loopback-only by default: {@link #allowWrites} enables the endpoints that declare or rank snapshots,
 * {@link #allowNonLoopback} lets the server bind an address other hosts can reach.
 */
public final class ServerOptions {
    /**
     * The longest timeout or interval, 100 years: long enough for "never", and short enough to count in nanoseconds
     * (about 292 years) as the server does.
     */
    public static final Duration MAX_DURATION = Duration.ofDays(36_500);

    private boolean allowWrites;
    private boolean allowNonLoopback;
    private Set<String> allowedHosts = Set.of();
    private int maxInitialLineBytes = 4096;
    private int maxHeaderBytes = 8192;
    private int maxRequestBodyBytes = 64 << 10;
    private Duration idleTimeout = Duration.ofSeconds(30);
    private Duration requestTimeout = Duration.ofSeconds(10);
    private Duration shipStallTimeout = Duration.ofSeconds(60);
    private int maxTransfers = 4;
    private int maxConnections = 256;
    private long followBufferBytes = 64L << 20;
    private int checkpointHistory = 100;
    private int sampleHistory = 300;
    private Duration sampleInterval = Duration.ofSeconds(1);
    private Duration deadBytesInterval = Duration.ofSeconds(60);
    /** The tests' seam: what a follow runs between its snapshot's declaration and its image's opening. */
    private Runnable beforeFollowImage = () -> {
    };

    /**
     * Enables what writes to the store (default off: the server only reads): POST /api/snapshots (declare), POST
     * /api/rank, and follow-mode shipping (which declares the snapshot its image is taken at).
     */
    public ServerOptions allowWrites(boolean v) {
        allowWrites = v;
        return this;
    }

    /** Allows binding a non-loopback address (default off). */
    public ServerOptions allowNonLoopback(boolean v) {
        allowNonLoopback = v;
        return this;
    }

    /**
     * Host names the admin endpoint answers to besides IP addresses and {@code localhost} (default none), as a
     * client puts them in the {@code Host} header, without a port: {@code allowedHosts("varve-1.internal")} when
     * Prometheus or a browser reaches the server by that name. A request naming any other host gets 403, so that a web
     * page whose name is made to resolve to this address (DNS rebinding) cannot read the store. Replaces the names
     * given before.
     */
    public ServerOptions allowedHosts(String... names) {
        if (names == null) throw new IllegalArgumentException("allowedHosts must not be null");
        Set<String> set = new TreeSet<>();
        for (String n : names) {
            if (n == null || n.isBlank() || !n.chars().allMatch(c -> c > ' ' && c < 127 && c != ':' && c != '/' && c != '[' && c != ']'))
                throw new IllegalArgumentException("allowedHosts: '" + n + "' is not a host name (give the name alone, without scheme or port)");
            String name = n.toLowerCase(Locale.ROOT);
            set.add(name.endsWith(".") ? name.substring(0, name.length() - 1) : name); // the absolute form of the same name
        }
        allowedHosts = Set.copyOf(set);
        return this;
    }

    /** Longest HTTP request line, bytes (default 4096); longer gets 414. */
    public ServerOptions maxInitialLineBytes(int v) {
        maxInitialLineBytes = positive("maxInitialLineBytes", v);
        return this;
    }

    /** Largest HTTP header block, bytes (default 8192); larger gets 431. */
    public ServerOptions maxHeaderBytes(int v) {
        maxHeaderBytes = positive("maxHeaderBytes", v);
        return this;
    }

    /** Largest HTTP request body, bytes (default 64 KiB); larger gets 413. */
    public ServerOptions maxRequestBodyBytes(int v) {
        maxRequestBodyBytes = positive("maxRequestBodyBytes", v);
        return this;
    }

    /**
     * An HTTP connection idle this long is closed (default 30 s), and so is a shipping connection whose HELLO is not
     * in this long after its first bytes.
     */
    public ServerOptions idleTimeout(Duration v) {
        idleTimeout = positive("idleTimeout", v);
        return this;
    }

    /** An HTTP request must arrive whole within this time of its first byte (default 10 s): slow clients are cut. */
    public ServerOptions requestTimeout(Duration v) {
        requestTimeout = positive("requestTimeout", v);
        return this;
    }

    /** A backup receiver that reads nothing for this long is cut off (default 60 s). */
    public ServerOptions shipStallTimeout(Duration v) {
        shipStallTimeout = positive("shipStallTimeout", v);
        return this;
    }

    /** Snapshot transfers served at once (default 4); more are refused with a message. */
    public ServerOptions maxTransfers(int v) {
        maxTransfers = positive("maxTransfers", v);
        return this;
    }

    /**
     * Connections open at once (default 256); the server closes any beyond it as soon as it accepts them, so a flood
     * of connections cannot take the file descriptors the store needs.
     */
    public ServerOptions maxConnections(int v) {
        maxConnections = positive("maxConnections", v);
        return this;
    }

    /**
     * Bytes of committed changes a follow stream may hold for a standby that reads slower than the store writes
     * (default 64 MiB); past that the stream is cut, never the writers slowed.
     */
    public ServerOptions followBufferBytes(long v) {
        if (v < 1 << 20) throw new IllegalArgumentException("followBufferBytes must be at least 1 MiB, was " + v);
        followBufferBytes = v;
        return this;
    }

    /** Checkpoints kept for /api/checkpoints and the dashboard (default 100). */
    public ServerOptions checkpointHistory(int v) {
        checkpointHistory = positive("checkpointHistory", v);
        return this;
    }

    /** Metric samples kept for /api/series and the dashboard (default 300). */
    public ServerOptions sampleHistory(int v) {
        sampleHistory = positive("sampleHistory", v);
        return this;
    }

    /** How often the server samples the store's metrics (default 1 s; at least 1 ms, the sampler's unit). */
    public ServerOptions sampleInterval(Duration v) {
        if (positive("sampleInterval", v).toMillis() < 1) throw new IllegalArgumentException("sampleInterval must be at least 1 ms, was " + v);
        sampleInterval = v;
        return this;
    }

    /**
     * How often the archive's dead bytes are measured (default 60 s; it reads every archived record's header). A
     * measurement that fails is served as unknown (NaN, JSON null) and tried again once this interval has passed.
     */
    public ServerOptions deadBytesInterval(Duration v) {
        deadBytesInterval = positive("deadBytesInterval", v);
        return this;
    }

    /**
     * The tests' seam, not API: {@code hook} runs on the shipping thread of every follow attempt, right after it
     * declared its snapshot and before it opens the snapshot's image — where the sender's retention policy may drop
     * that snapshot, a race the tests make happen every time.
     */
    ServerOptions beforeFollowImage(Runnable hook) {
        if (hook == null) throw new IllegalArgumentException("beforeFollowImage hook is null");
        beforeFollowImage = hook;
        return this;
    }

    Runnable beforeFollowImage() {
        return beforeFollowImage;
    }

    boolean allowWrites() {
        return allowWrites;
    }

    boolean allowNonLoopback() {
        return allowNonLoopback;
    }

    Set<String> allowedHosts() {
        return allowedHosts;
    }

    int maxInitialLineBytes() {
        return maxInitialLineBytes;
    }

    int maxHeaderBytes() {
        return maxHeaderBytes;
    }

    int maxRequestBodyBytes() {
        return maxRequestBodyBytes;
    }

    Duration idleTimeout() {
        return idleTimeout;
    }

    Duration requestTimeout() {
        return requestTimeout;
    }

    Duration shipStallTimeout() {
        return shipStallTimeout;
    }

    int maxTransfers() {
        return maxTransfers;
    }

    int maxConnections() {
        return maxConnections;
    }

    long followBufferBytes() {
        return followBufferBytes;
    }

    int checkpointHistory() {
        return checkpointHistory;
    }

    int sampleHistory() {
        return sampleHistory;
    }

    Duration sampleInterval() {
        return sampleInterval;
    }

    Duration deadBytesInterval() {
        return deadBytesInterval;
    }

    private static int positive(String field, int v) {
        if (v <= 0) throw new IllegalArgumentException(field + " must be positive, was " + v);
        return v;
    }

    private static Duration positive(String field, Duration v) {
        if (v == null || v.isNegative() || v.isZero()) throw new IllegalArgumentException(field + " must be a positive duration, was " + v);
        // a longer one would overflow where it is counted in nanoseconds: at start, or on every connection
        if (v.compareTo(MAX_DURATION) > 0) throw new IllegalArgumentException(field + " must be at most " + MAX_DURATION + ", was " + v);
        return v;
    }
}
