//! Messages for later: schedule_message records one ([`schedule`]), the scheduler claims
//! the rows coming due and sends each through the one send path ([`due`]), and what its
//! gauges show ([`gauges`]).

pub mod due;
pub mod gauges;
pub mod schedule;
