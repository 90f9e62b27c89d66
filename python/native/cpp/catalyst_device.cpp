// backline.qubit as a device of Catalyst's runtime (pennylane-catalyst 0.15).
//
// Catalyst loads a device from the shared library its Python device names in
// get_c_interface(), calls `<Name>Factory(kwargs)` for an object of its runtime device class
// and drives it through that class's virtual methods. The declaration below is ours, written
// from the interface Catalyst documents for custom devices: what must match is the ABI — the
// virtual methods in their order, their signatures, and the layout of the array views
// Catalyst passes — and the tests against the installed Catalyst judge it. Every call is
// forwarded to the Rust device (src/catalyst.rs); a Rust error comes back as a message and is
// thrown here as std::runtime_error, which Catalyst's compiled function raises in Python.

#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace backline_catalyst {

using QubitId = intptr_t;
using ObsKey = intptr_t;
using Result = bool *;

// The layout of Catalyst's strided array view (a memref without its allocated pointer).
template <typename T, size_t R> struct View {
    T *data;
    size_t offset;
    size_t sizes[R];
    size_t strides[R];
};

// The Rust side (src/catalyst/ffi.rs). Every call that can fail returns null or an error
// message to free with backline_catalyst_free_error.
extern "C" {
void *backline_catalyst_new(const char *kwargs, char **error);
void backline_catalyst_drop(void *device);
char *backline_catalyst_allocate(void *device, uint64_t n);
void backline_catalyst_release(void *device);
uint64_t backline_catalyst_num_qubits(const void *device);
void backline_catalyst_set_shots(void *device, uint64_t shots);
uint64_t backline_catalyst_shots(const void *device);
char *backline_catalyst_gate(void *device, const char *name, size_t name_len, const double *params,
                             size_t n_params, const int64_t *wires, size_t n_wires, bool inverse,
                             size_t n_controls);
char *backline_catalyst_measure(void *device, int64_t wire, bool has_postselect,
                                int32_t postselect, bool *out);
char *backline_catalyst_sample(void *device, const int64_t *wires, size_t n_wires,
                               uint8_t *out, size_t out_len);
char *backline_catalyst_channel(void *device, const char *name, size_t name_len, double p,
                                int64_t wire);
void backline_catalyst_free_error(char *error);
}

[[noreturn]] void fail(const std::string &what)
{
    throw std::runtime_error("backline.qubit: " + what);
}

void check(char *error)
{
    if (error != nullptr) {
        std::string what(error);
        backline_catalyst_free_error(error);
        throw std::runtime_error(what);
    }
}

bool kTrue = true;
bool kFalse = false;

class Device;
// The device of the run in progress on this thread (Catalyst runs one at a time): the noise
// channels' runtime symbols, which get no device, act on it.
thread_local Device *current = nullptr;

class Device {
  public:
    explicit Device(const char *kwargs)
    {
        char *error = nullptr;
        rust_ = backline_catalyst_new(kwargs, &error);
        check(error);
        current = this;
    }
    Device(const Device &) = delete;
    Device &operator=(const Device &) = delete;

    // The slots, in the order of Catalyst's runtime device class.
    virtual ~Device()
    {
        if (current == this) {
            current = nullptr;
        }
        backline_catalyst_drop(rust_);
    }

    virtual std::vector<QubitId> AllocateQubits(size_t n)
    {
        check(backline_catalyst_allocate(rust_, n));
        std::vector<QubitId> ids(n);
        for (size_t i = 0; i < n; i++) {
            ids[i] = static_cast<QubitId>(i);
        }
        return ids;
    }
    virtual void ReleaseQubits(const std::vector<QubitId> &) { backline_catalyst_release(rust_); }
    virtual size_t GetNumQubits() const { return backline_catalyst_num_qubits(rust_); }
    virtual QubitId AllocateQubit() { fail("dynamic qubit allocation is not supported"); }
    virtual void ReleaseQubit(QubitId) { fail("dynamic qubit release is not supported"); }
    virtual void SetDeviceShots(size_t shots) { backline_catalyst_set_shots(rust_, shots); }
    virtual size_t GetDeviceShots() const { return backline_catalyst_shots(rust_); }
    virtual void SetDevicePRNG(std::mt19937 *) {}
    virtual void NamedOperation(const std::string &name, const std::vector<double> &params,
                                const std::vector<QubitId> &wires, bool inverse,
                                const std::vector<QubitId> &controlled_wires,
                                const std::vector<bool> &, const std::vector<std::string> &)
    {
        std::vector<int64_t> ws(wires.begin(), wires.end());
        check(backline_catalyst_gate(rust_, name.data(), name.size(), params.data(),
                                     params.size(), ws.data(), ws.size(), inverse,
                                     controlled_wires.size()));
    }
    virtual Result Measure(QubitId wire, std::optional<int32_t> postselect)
    {
        bool v = false;
        check(backline_catalyst_measure(rust_, wire, postselect.has_value(),
                                        postselect.value_or(0), &v));
        return v ? &kTrue : &kFalse;
    }
    virtual void MatrixOperation(const std::vector<std::complex<double>> &,
                                 const std::vector<QubitId> &, bool,
                                 const std::vector<QubitId> &, const std::vector<bool> &)
    {
        fail("a matrix gate is not a gate the stabilizer VM runs");
    }
    virtual void SetBasisState(View<int8_t, 1> &, std::vector<QubitId> &)
    {
        fail("state preparation is not supported (prepare with gates)");
    }
    virtual void SetState(View<std::complex<double>, 1> &, std::vector<QubitId> &)
    {
        fail("state preparation is not supported (prepare with gates)");
    }
    virtual ObsKey Observable(int8_t, const std::vector<std::complex<double>> &,
                              const std::vector<QubitId> &)
    {
        fail(kMeasurements);
    }
    virtual ObsKey TensorObservable(const std::vector<ObsKey> &) { fail(kMeasurements); }
    virtual ObsKey HamiltonianObservable(const std::vector<double> &, const std::vector<ObsKey> &)
    {
        fail(kMeasurements);
    }
    virtual void Sample(View<double, 2> &samples) { PartialSample(samples, all_wires()); }
    virtual void PartialSample(View<double, 2> &samples, const std::vector<QubitId> &wires)
    {
        std::vector<uint8_t> bits = sample(wires);
        size_t n = wires.size();
        size_t shots = bits.size() / (n == 0 ? 1 : n);
        if (samples.sizes[0] != shots || samples.sizes[1] != n) {
            fail("sample buffer of " + std::to_string(samples.sizes[0]) + " x " +
                 std::to_string(samples.sizes[1]) + " for " + std::to_string(shots) +
                 " shots of " + std::to_string(n) + " wires");
        }
        for (size_t s = 0; s < shots; s++) {
            for (size_t w = 0; w < n; w++) {
                samples.data[samples.offset + s * samples.strides[0] + w * samples.strides[1]] =
                    bits[s * n + w];
            }
        }
    }
    virtual void Counts(View<double, 1> &eigvals, View<int64_t, 1> &counts)
    {
        PartialCounts(eigvals, counts, all_wires());
    }
    virtual void PartialCounts(View<double, 1> &eigvals, View<int64_t, 1> &counts,
                               const std::vector<QubitId> &wires)
    {
        std::vector<int64_t> hist = histogram(wires, eigvals.sizes[0]);
        for (size_t i = 0; i < hist.size(); i++) {
            eigvals.data[eigvals.offset + i * eigvals.strides[0]] = static_cast<double>(i);
            counts.data[counts.offset + i * counts.strides[0]] = hist[i];
        }
    }
    virtual void Probs(View<double, 1> &probs) { PartialProbs(probs, all_wires()); }
    virtual void PartialProbs(View<double, 1> &probs, const std::vector<QubitId> &wires)
    {
        std::vector<int64_t> hist = histogram(wires, probs.sizes[0]);
        int64_t total = 0;
        for (int64_t c : hist) {
            total += c;
        }
        for (size_t i = 0; i < hist.size(); i++) {
            probs.data[probs.offset + i * probs.strides[0]] =
                total == 0 ? 0.0 : static_cast<double>(hist[i]) / static_cast<double>(total);
        }
    }
    virtual double Expval(ObsKey) { fail(kMeasurements); }
    virtual double Var(ObsKey) { fail(kMeasurements); }
    virtual void State(View<std::complex<double>, 1> &)
    {
        fail("the state vector: backline.qubit's qubits are a stabilizer VM; sample them");
    }
    virtual Result PauliMeasure(const std::string &, const std::vector<QubitId> &)
    {
        fail("Pauli-product measurements are not supported (measure wires)");
    }
    virtual void Gradient(std::vector<View<double, 1>> &, const std::vector<size_t> &)
    {
        fail("gradients are not supported (a sampling device)");
    }
    virtual void StartTapeRecording() { fail("gradients are not supported (a sampling device)"); }
    virtual void StopTapeRecording() { fail("gradients are not supported (a sampling device)"); }

    // Not a slot: a Pauli channel on a wire (the runtime symbols below).
    void Channel(const char *name, double p, QubitId wire)
    {
        check(backline_catalyst_channel(rust_, name, std::strlen(name), p, wire));
    }

  private:
    static constexpr const char *kMeasurements =
        "observables are not supported under catalyst.qjit: use qml.sample, qml.counts or "
        "qml.probs";

    std::vector<QubitId> all_wires() const
    {
        std::vector<QubitId> ws(GetNumQubits());
        for (size_t i = 0; i < ws.size(); i++) {
            ws[i] = static_cast<QubitId>(i);
        }
        return ws;
    }

    std::vector<uint8_t> sample(const std::vector<QubitId> &wires)
    {
        std::vector<int64_t> ws(wires.begin(), wires.end());
        size_t shots = GetDeviceShots() == 0 ? 1 : GetDeviceShots();
        std::vector<uint8_t> bits(shots * ws.size());
        check(backline_catalyst_sample(rust_, ws.data(), ws.size(), bits.data(), bits.size()));
        return bits;
    }

    // Counts of each basis state of `wires` (the first wire the most significant bit).
    std::vector<int64_t> histogram(const std::vector<QubitId> &wires, size_t states)
    {
        size_t n = wires.size();
        if (n >= 63 || states != (size_t{1} << n)) {
            fail(std::to_string(states) + " outcomes for " + std::to_string(n) + " wires");
        }
        std::vector<uint8_t> bits = sample(wires);
        std::vector<int64_t> hist(states, 0);
        for (size_t s = 0; n > 0 && s < bits.size() / n; s++) {
            size_t k = 0;
            for (size_t w = 0; w < n; w++) {
                k = (k << 1) | bits[s * n + w];
            }
            hist[k]++;
        }
        if (n == 0) {
            hist[0] = static_cast<int64_t>(GetDeviceShots());
        }
        return hist;
    }

    void *rust_ = nullptr;
};

} // namespace backline_catalyst

// A PennyLane noise channel in a compiled program lowers to a call of
// `__catalyst__qis__<Name>(p, qubit, modifiers)`, which Catalyst's runtime does not define; the
// Rust library exports these names and calls this.
extern "C" void backline_catalyst_qis_channel(const char *name, double p, void *qubit)
{
    if (backline_catalyst::current == nullptr) {
        backline_catalyst::fail(std::string(name) + " outside a run of backline.qubit");
    }
    backline_catalyst::current->Channel(name, p, reinterpret_cast<backline_catalyst::QubitId>(qubit));
}

// The factory; the Rust library exports it as BacklineQubitFactory (a C++ symbol linked into
// a Rust cdylib is not exported). An error in the kwargs or the placement is thrown from here
// and unwinds through the Rust re-export ("C-unwind") into Catalyst.
extern "C" void *backline_catalyst_factory(const char *kwargs)
{
    return new backline_catalyst::Device(kwargs);
}
