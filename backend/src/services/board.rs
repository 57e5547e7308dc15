//! What staff see: the stalled operations of their departments, and one operation in full.
use super::Caller;
use super::operations::view_in;
use crate::db::operations::BoardQuery;
use crate::{AppState, db};
use chrono::Duration;
use contract::AppError;
use contract::DepartmentDto;
use contract::board::{BoardFilter, BoardPage, BoardRow, HoldView, OperationDetail};
use domain::audit::ObjectType;
use domain::rights::Act;
use domain::stall::FailureClass;

pub const PAGE_SIZE: i64 = 50;

/// Folds the board's count changes into its counts (see `Db::fold_board_counts`).
pub async fn fold_counts(state: &AppState) -> Result<u64, AppError> {
    Ok(state.db.fold_board_counts().await?)
}

pub async fn stalled(state: &AppState, caller: &Caller, filter: BoardFilter) -> Result<BoardPage, AppError> {
    let visible = caller.readable_departments();
    // Choosing a department narrows what the caller may see; it never widens it.
    let chosen: Option<Vec<String>> = match (&filter.department, &visible) {
        (Some(d), Some(mine)) if !mine.contains(d) => Some(Vec::new()),
        (Some(d), _) => Some(vec![d.clone()]),
        (None, mine) => mine.clone(),
    };
    let query = BoardQuery {
        departments: chosen.as_deref(),
        workflow: filter.workflow.as_deref().filter(|w| !w.is_empty()),
        event: filter.event.as_deref().filter(|e| !e.is_empty()),
        created_before: filter.min_age_minutes.filter(|m| *m > 0).map(|m| state.clock.now() - Duration::minutes(m)),
        after_id: filter.after.unwrap_or(0),
        limit: PAGE_SIZE + 1,
    };
    // Four reads that stand on their own (the rows, the counts, overdue incident actions, open pauses): each is
    // one statement, and none is checked against another, so they need no shared snapshot — a transaction would
    // only add its BEGIN and COMMIT round trips to every board page.
    let mut tx = state.db.connection().await?;
    let mut rows = db::operations::stalled_page(&mut tx, &query).await?;
    let counts = db::operations::stalled_counts(&mut tx, &query).await?;
    let overdue_actions = super::incidents::overdue_in(&mut tx, caller, state.clock.now()).await?;
    let pauses = super::stop_switch::open(state, &mut tx, caller).await?;
    let next = (rows.len() as i64 > PAGE_SIZE).then(|| {
        rows.truncate(PAGE_SIZE as usize);
        rows.last().map(|r| r.id)
    });
    let departments = match visible {
        Some(mine) => mine,
        None => state.config.departments.iter().map(|d| d.code.clone()).collect(),
    };
    let workflows =
        state.config.workflows.iter().filter(|w| departments.contains(&w.department)).map(|w| w.name.clone()).collect();
    Ok(BoardPage {
        counts,
        rows: rows
            .into_iter()
            .map(|r| BoardRow {
                cursor: r.id,
                process_id: r.process_id,
                workflow: r.workflow,
                department: r.department,
                status: r.status,
                event: r.event,
                failure_class: r.failure_class.as_deref().and_then(FailureClass::parse),
                business_key: r.business_key,
                possible_duplicate_of: r.possible_duplicate_of,
                created_at: r.created_at,
                updated_at: r.updated_at,
                drill: r.drill_id.is_some(),
            })
            .collect(),
        next: next.flatten(),
        departments: departments
            .into_iter()
            .map(|code| {
                let known = state.config.department(&code);
                let name_en = known.and_then(|d| d.name_en.clone());
                DepartmentDto { name: state.config.department_name(&code, false), name_en, code }
            })
            .collect(),
        workflows,
        // Set by the server function in demo mode.
        demo_start: None,
        overdue_actions,
        pauses,
        may_start_bulk: !caller.acting_departments(Act::RunBulkRerun).is_empty(),
    })
}

/// One operation with its steps and audit timeline; another department's operation does not exist (404).
pub async fn detail(state: &AppState, caller: &Caller, process_id: &str) -> Result<OperationDetail, AppError> {
    let mut tx = state.db.begin_read().await?;
    let mut operation = view_in(&mut tx, process_id).await?.ok_or(AppError::NotFound)?;
    if !caller.may_read(&operation.department) {
        return Err(AppError::NotFound);
    }
    let names = super::names::Names::load(&mut tx).await?;
    super::operations::in_readers_words(&mut operation.steps, caller.locale, &names);
    let timeline = names.timeline(&mut tx, caller, (ObjectType::Operation, process_id)).await?;
    let id = db::operations::by_process_id(&mut tx, process_id).await?.map(|o| o.id).unwrap_or_default();
    let hold = db::holds::open(&mut tx, id).await?.map(|h| HoldView {
        placed_by: h.placed_by,
        placed_at: h.placed_at,
        reason: h.reason,
    });
    let may_act = caller.may_act(Act::RequestRerun, &operation.department);
    let may_record_verdict = caller.may_act(Act::RecordVerdict, &operation.department);
    let open_request = db::rerun_requests::open_for_operation(&mut tx, id).await?.map(|r| (r.id, r.status));
    let department_name = names.department(&operation.department, caller.reads_english()).to_string();
    Ok(OperationDetail { operation, department_name, timeline, hold, may_act, may_record_verdict, open_request })
}
