! src/fortran/tally.f90 — the tally module: tally's C API for `use mpi_f08` codes.
!
!   use mpi_f08
!   use tally
!   type(tally_mutex) :: m
!   integer :: ierr
!   call tally_mutex_create(MPI_COMM_WORLD, m, ierr)    ! collective
!   call tally_mutex_lock(m)
!   ! ... critical section ...
!   call tally_mutex_unlock(m)
!   call tally_mutex_free(m)                             ! collective
!
! Names follow the C API (tally.h) and mpi_f08's conventions: every routine is a
! subroutine whose last argument, ierror, is optional. When present it is set to
! TALLY_SUCCESS or a TALLY_ERR_* code, as the C function returns; when absent, a
! failure prints tally_last_error() to the error unit and stops the program (as
! MPI_ERRORS_ARE_FATAL does for MPI). tally_last_error() and tally_strerror(code)
! return the messages as Fortran strings.
module tally
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: error_unit, real32, real64
  use mpi_f08, only: MPI_Comm
  implicit none
  private

  ! Error codes (tally/common.h).
  integer, parameter, public :: TALLY_SUCCESS = 0, TALLY_ERR_ARG = 1, TALLY_ERR_NOT_OWNER = 2, &
                                TALLY_ERR_DEADLOCK = 3, TALLY_ERR_THREAD_LEVEL = 4, &
                                TALLY_ERR_MPI = 5, TALLY_ERR_STATE = 6
  ! Option values (tally/tally.h).
  integer, parameter, public :: TALLY_PROGRESS_IN_CALLS = 0, TALLY_PROGRESS_THREAD = 1, &
                                TALLY_PROGRESS_AUTO = 2
  ! TALLY_PROGRESS_IN_CALLS by its name before 2026-12-07.
  integer, parameter, public :: TALLY_PROGRESS_INLINE = TALLY_PROGRESS_IN_CALLS
  integer, parameter, public :: TALLY_POLL_SPIN = 0, TALLY_POLL_BACKOFF = 1, TALLY_POLL_SLEEP = 2, &
                                TALLY_POLL_ADAPTIVE = 3
  integer, parameter, public :: TALLY_TOPOLOGY_FLAT = 0, TALLY_TOPOLOGY_NODE = 1, &
                                TALLY_TOPOLOGY_AUTO = 2

  ! A mutex handle; default-initialized to no mutex.
  type, public :: tally_mutex
    type(c_ptr) :: handle = c_null_ptr
  end type

  ! tally_options of tally.h, field for field; set it with tally_options_init first
  ! (which records its size, as in C). name stays c_null_ptr from Fortran
  ! (diagnostics then say "mutex #k").
  type, public, bind(C) :: tally_options
    integer(c_size_t) :: size
    integer(c_int) :: initial_owner
    integer(c_int) :: progress
    integer(c_int) :: poll
    integer(c_int) :: poll_interval_us
    type(c_ptr) :: name
    real(c_double) :: wait_warning_s
    integer(c_int) :: topology
    integer(c_int) :: pass_bound
  end type

  ! tally_stats of tally/common.h (unsigned 64-bit counters, read as signed).
  type, public, bind(C) :: tally_stats
    integer(c_int64_t) :: acquisitions, local_acquisitions, requests_sent, requests_received, &
                          tokens_sent, tokens_received, broadcasts, local_handoffs_sent, &
                          local_handoffs_received, bound_releases
  end type

  public :: tally_options_init, tally_mutex_create, tally_mutex_create_payload, tally_mutex_free, tally_mutex_lock, &
            tally_mutex_unlock, tally_mutex_trylock, tally_mutex_timedlock, tally_mutex_poll, &
            tally_mutex_payload, tally_mutex_get_stats, tally_mutex_rank, tally_mutex_size, &
            tally_last_error, tally_strerror

  ! tally_mutex_create(comm, mutex [, options] [, ierror]) and
  ! tally_mutex_create_payload(comm, mutex [, options], payload_bytes [, ierror]), as
  ! in C: ierror last, so that it can follow the required arguments positionally.
  interface tally_mutex_create
    module procedure create_default, create_options
  end interface
  interface tally_mutex_create_payload
    module procedure create_payload_default, create_payload_options
  end interface

  ! Seconds as default real or double precision.
  interface tally_mutex_timedlock
    module procedure timedlock_r32, timedlock_r64
  end interface

  interface
    integer(c_int) function c_options_init(opts, size) bind(C, name="tally_options_init_sized")
      import :: c_int, c_size_t, tally_options
      type(tally_options), intent(out) :: opts
      integer(c_size_t), value :: size
    end function
    integer(c_int) function c_create(comm, opts, bytes, out) bind(C, name="tally_f_mutex_create")
      import :: c_int, c_ptr, c_size_t
      integer(c_int), value :: comm
      type(c_ptr), value :: opts
      integer(c_size_t), value :: bytes
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_free(m) bind(C, name="tally_mutex_free")
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: m
    end function
    integer(c_int) function c_lock(m) bind(C, name="tally_mutex_lock")
      import :: c_int, c_ptr
      type(c_ptr), value :: m
    end function
    integer(c_int) function c_unlock(m) bind(C, name="tally_mutex_unlock")
      import :: c_int, c_ptr
      type(c_ptr), value :: m
    end function
    integer(c_int) function c_poll(m) bind(C, name="tally_mutex_poll")
      import :: c_int, c_ptr
      type(c_ptr), value :: m
    end function
    integer(c_int) function c_trylock(m, acquired) bind(C, name="tally_mutex_trylock")
      import :: c_int, c_ptr
      type(c_ptr), value :: m
      integer(c_int), intent(out) :: acquired
    end function
    integer(c_int) function c_timedlock(m, seconds, acquired) bind(C, name="tally_mutex_timedlock")
      import :: c_int, c_ptr, c_double
      type(c_ptr), value :: m
      real(c_double), value :: seconds
      integer(c_int), intent(out) :: acquired
    end function
    integer(c_int) function c_payload(m, ptr, bytes) bind(C, name="tally_mutex_payload")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: m
      type(c_ptr), intent(out) :: ptr
      integer(c_size_t), intent(out) :: bytes
    end function
    integer(c_int) function c_get_stats(m, stats, size) bind(C, name="tally_mutex_get_stats_sized")
      import :: c_int, c_ptr, c_size_t, tally_stats
      type(c_ptr), value :: m
      type(tally_stats), intent(out) :: stats
      integer(c_size_t), value :: size
    end function
    integer(c_int) function c_rank(m, rank) bind(C, name="tally_mutex_rank")
      import :: c_int, c_ptr
      type(c_ptr), value :: m
      integer(c_int), intent(out) :: rank
    end function
    integer(c_int) function c_size(m, size) bind(C, name="tally_mutex_size")
      import :: c_int, c_ptr
      type(c_ptr), value :: m
      integer(c_int), intent(out) :: size
    end function
    type(c_ptr) function c_last_error() bind(C, name="tally_last_error")
      import :: c_ptr
    end function
    type(c_ptr) function c_strerror(code) bind(C, name="tally_strerror")
      import :: c_ptr, c_int
      integer(c_int), value :: code
    end function
    integer(c_size_t) function c_strlen(s) bind(C, name="strlen")
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
    end function
  end interface

contains

  ! A NUL-terminated C string as a Fortran string ("" for NULL).
  function from_c(s) result(f)
    type(c_ptr), intent(in) :: s
    character(len=:), allocatable :: f
    character(kind=c_char), pointer :: chars(:)
    integer :: i, n
    if (.not. c_associated(s)) then
      f = ""
      return
    end if
    n = int(c_strlen(s))
    call c_f_pointer(s, chars, [n])
    allocate (character(len=n) :: f)
    do i = 1, n
      f(i:i) = chars(i)
    end do
  end function

  ! Hands the C code to ierror, or stops on a failure when there is no ierror.
  subroutine finish(rc, ierror)
    integer(c_int), intent(in) :: rc
    integer, intent(out), optional :: ierror
    if (present(ierror)) then
      ierror = int(rc)
    else if (rc /= TALLY_SUCCESS) then
      write (error_unit, '(a)') tally_last_error()
      error stop 1
    end if
  end subroutine

  ! The message of the calling thread's last failed call ("tally: tally_mutex_unlock: ...").
  function tally_last_error() result(message)
    character(len=:), allocatable :: message
    message = from_c(c_last_error())
  end function

  ! A short description of a TALLY_* code.
  function tally_strerror(code) result(message)
    integer, intent(in) :: code
    character(len=:), allocatable :: message
    message = from_c(c_strerror(int(code, c_int)))
  end function

  ! The defaults, as tally_options_init in C.
  subroutine tally_options_init(options)
    type(tally_options), intent(out) :: options
    integer(c_int) :: rc
    rc = c_options_init(options, c_sizeof(options))  ! TALLY_SUCCESS: options is present and full-sized
  end subroutine

  ! Collective over comm; the default options, or `options` (tally_options_init).
  subroutine create_default(comm, mutex, ierror)
    type(MPI_Comm), intent(in) :: comm
    type(tally_mutex), intent(out) :: mutex
    integer, intent(out), optional :: ierror
    call finish(c_create(comm%MPI_VAL, c_null_ptr, 0_c_size_t, mutex%handle), ierror)
  end subroutine

  subroutine create_options(comm, mutex, options, ierror)
    type(MPI_Comm), intent(in) :: comm
    type(tally_mutex), intent(out) :: mutex
    type(tally_options), intent(in), target :: options
    integer, intent(out), optional :: ierror
    call finish(c_create(comm%MPI_VAL, c_loc(options), 0_c_size_t, mutex%handle), ierror)
  end subroutine

  ! As tally_mutex_create, with payload_bytes of application state carried in the
  ! token (tally_mutex_payload).
  subroutine create_payload_default(comm, mutex, payload_bytes, ierror)
    type(MPI_Comm), intent(in) :: comm
    type(tally_mutex), intent(out) :: mutex
    integer, intent(in) :: payload_bytes
    integer, intent(out), optional :: ierror
    call finish(c_create(comm%MPI_VAL, c_null_ptr, c_bytes(payload_bytes), mutex%handle), ierror)
  end subroutine

  subroutine create_payload_options(comm, mutex, options, payload_bytes, ierror)
    type(MPI_Comm), intent(in) :: comm
    type(tally_mutex), intent(out) :: mutex
    type(tally_options), intent(in), target :: options
    integer, intent(in) :: payload_bytes
    integer, intent(out), optional :: ierror
    call finish(c_create(comm%MPI_VAL, c_loc(options), c_bytes(payload_bytes), mutex%handle), ierror)
  end subroutine

  ! A byte count as size_t: a negative one would wrap, so it becomes size_t's
  ! largest, which creation refuses alike.
  function c_bytes(n) result(bytes)
    integer, intent(in) :: n
    integer(c_size_t) :: bytes
    bytes = huge(bytes)
    if (n >= 0) bytes = int(n, c_size_t)
  end function

  ! Collective; mutex becomes no mutex.
  subroutine tally_mutex_free(mutex, ierror)
    type(tally_mutex), intent(inout) :: mutex
    integer, intent(out), optional :: ierror
    call finish(c_free(mutex%handle), ierror)
  end subroutine

  subroutine tally_mutex_lock(mutex, ierror)
    type(tally_mutex), intent(in) :: mutex
    integer, intent(out), optional :: ierror
    call finish(c_lock(mutex%handle), ierror)
  end subroutine

  subroutine tally_mutex_unlock(mutex, ierror)
    type(tally_mutex), intent(in) :: mutex
    integer, intent(out), optional :: ierror
    call finish(c_unlock(mutex%handle), ierror)
  end subroutine

  ! Drives progress (answers requests while this rank holds the token idle).
  subroutine tally_mutex_poll(mutex, ierror)
    type(tally_mutex), intent(in) :: mutex
    integer, intent(out), optional :: ierror
    call finish(c_poll(mutex%handle), ierror)
  end subroutine

  ! acquired = .true. if this rank held the token idle and entered; never sends.
  subroutine tally_mutex_trylock(mutex, acquired, ierror)
    type(tally_mutex), intent(in) :: mutex
    logical, intent(out) :: acquired
    integer, intent(out), optional :: ierror
    integer(c_int) :: got
    call finish(c_trylock(mutex%handle, got), ierror)
    acquired = got /= 0
  end subroutine

  subroutine timedlock_r64(mutex, seconds, acquired, ierror)
    type(tally_mutex), intent(in) :: mutex
    real(real64), intent(in) :: seconds
    logical, intent(out) :: acquired
    integer, intent(out), optional :: ierror
    integer(c_int) :: got
    call finish(c_timedlock(mutex%handle, real(seconds, c_double), got), ierror)
    acquired = got /= 0
  end subroutine

  subroutine timedlock_r32(mutex, seconds, acquired, ierror)
    type(tally_mutex), intent(in) :: mutex
    real(real32), intent(in) :: seconds
    logical, intent(out) :: acquired
    integer, intent(out), optional :: ierror
    call timedlock_r64(mutex, real(seconds, real64), acquired, ierror)
  end subroutine

  ! The token's payload inside the critical section: its address and size in bytes
  ! (map it with c_f_pointer); valid until unlock.
  subroutine tally_mutex_payload(mutex, ptr, bytes, ierror)
    type(tally_mutex), intent(in) :: mutex
    type(c_ptr), intent(out) :: ptr
    integer(c_size_t), intent(out) :: bytes
    integer, intent(out), optional :: ierror
    call finish(c_payload(mutex%handle, ptr, bytes), ierror)
  end subroutine

  subroutine tally_mutex_get_stats(mutex, stats, ierror)
    type(tally_mutex), intent(in) :: mutex
    type(tally_stats), intent(out) :: stats
    integer, intent(out), optional :: ierror
    call finish(c_get_stats(mutex%handle, stats, c_sizeof(stats)), ierror)
  end subroutine

  subroutine tally_mutex_rank(mutex, rank, ierror)
    type(tally_mutex), intent(in) :: mutex
    integer, intent(out) :: rank
    integer, intent(out), optional :: ierror
    integer(c_int) :: r
    call finish(c_rank(mutex%handle, r), ierror)
    rank = int(r)
  end subroutine

  subroutine tally_mutex_size(mutex, size, ierror)
    type(tally_mutex), intent(in) :: mutex
    integer, intent(out) :: size
    integer, intent(out), optional :: ierror
    integer(c_int) :: s
    call finish(c_size(mutex%handle, s), ierror)
    size = int(s)
  end subroutine

end module tally
